// The cell viewer (workflow_bench/reports/viewer; the data shapes are documented in its modules).
// Every value shown came from an agent: it is inserted only as text nodes (never innerHTML, which
// Trusted Types would refuse anyway), links only to plain relative paths, classes only from
// fixed tables. State lives in the URL hash: #cell=<task>/<arm>/<run>&compare=…&q=…&arm=…
(function () {
  "use strict";
  var errors = document.getElementById("page-errors");
  window.addEventListener("error", function (event) {
    errors.appendChild(document.createTextNode(String(event.message) + "\n"));
  });

  var DATA_FILE = /^viewer\/[0-9a-f]{20}\.js$/;
  var RAW_PATH = /^[A-Za-z0-9_+\-][A-Za-z0-9._+\-]*(\/[A-Za-z0-9_+\-][A-Za-z0-9._+\-]*)*$/;
  var policy = window.trustedTypes.createPolicy("wfb-viewer", {
    createScriptURL: function (url) {
      if (!DATA_FILE.test(url)) throw new Error("refused script URL " + url);
      return url;
    },
  });
  var data = JSON.parse(document.getElementById("viewer-data").textContent);
  var cells = data.cells;
  var byKey = new Map();
  cells.forEach(function (c) { byKey.set(c.key, c); });
  var loaded = new Map();   // file -> document
  var waiting = new Map();  // file -> [callbacks]
  var app = document.getElementById("app");
  var refocus = false;

  // ── tiny DOM helpers: text only ────────────────────────────────────────────
  function el(tag, cls) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function add(node) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); continue; }
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
  }
  function rawLink(path, label) {
    if (typeof path !== "string" || !RAW_PATH.test(path) || path.split("/").indexOf("..") >= 0) {
      return el("span", "", label);
    }
    var a = el("a", "", label);
    a.setAttribute("href", path);
    a.setAttribute("rel", "noopener noreferrer");
    return a;
  }
  function fmt(value, digits) {
    if (value === null || value === undefined) return "n/a";
    if (typeof value === "number" && digits !== undefined) return value.toFixed(digits);
    return String(value);
  }
  function yesNo(value) {
    if (value === true) return el("span", "yes", "yes");
    if (value === false) return el("span", "no", "no");
    return el("span", "unknown", "n/a");
  }
  var OUTCOME_CLASS = { passed: "outcome-passed", failed: "outcome-failed", error: "outcome-error", skipped: "outcome-skipped" };
  function truncatedNote(what) { return el("span", "truncated", "truncated: " + what); }

  // ── state in the hash ─────────────────────────────────────────────────────
  function readState() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    return {
      cell: params.get("cell"), compare: params.get("compare"), q: params.get("q") || "",
      arm: params.get("arm") || "", resolved: params.get("resolved") || "", error: params.get("error") || "",
      fired: params.get("fired") || "", sort: params.get("sort") || "", dir: params.get("dir") || "asc",
    };
  }
  function hashOf(state) {
    var params = new URLSearchParams();
    ["cell", "compare", "q", "arm", "resolved", "error", "fired", "sort", "dir"].forEach(function (k) {
      if (state[k] && !(k === "dir" && state[k] === "asc")) params.set(k, state[k]);
    });
    return "#" + params.toString().replace(/%2F/g, "/");
  }
  function go(state, replace) {
    var hash = hashOf(state);
    if (replace) { history.replaceState(null, "", hash); render(); } else { location.hash = hash; }
  }
  window.addEventListener("hashchange", render);

  // ── lazy cell data ────────────────────────────────────────────────────────
  window.wfbViewer = {
    receive: function (file, text) {
      if (!DATA_FILE.test(file) || loaded.has(file)) return;
      loaded.set(file, JSON.parse(text));
      (waiting.get(file) || []).forEach(function (cb) { cb(loaded.get(file)); });
      waiting.delete(file);
    },
  };
  function load(entry, callback) {
    if (loaded.has(entry.file)) { callback(loaded.get(entry.file)); return; }
    if (waiting.has(entry.file)) { waiting.get(entry.file).push(callback); return; }
    waiting.set(entry.file, [callback]);
    var script = document.createElement("script");
    script.charset = "utf-8";
    script.onerror = function () {
      waiting.delete(entry.file);
      callback(null);
    };
    script.src = policy.createScriptURL(entry.file);
    document.head.appendChild(script);
  }

  // ── the cell list ─────────────────────────────────────────────────────────
  // [key, header, class, decimals]; the measured columns come from reports/columns.py
  var COLUMNS = [
    ["task", "task"], ["arm", "arm"], ["run", "run", "num"], ["resolved", "resolved"],
    ["error_kind", "error kind"],
  ].concat(data.columns.map(function (c) { return [c.field, c.header, "num", c.digits]; }), [
    ["skill_fired", "skill fired"], ["failed_tests", "failed tests", "num"],
  ]);
  function failedTests(c) {
    if (c.verify_failed === null && c.oracle_failed === null) return null;
    return (c.verify_failed || 0) + (c.oracle_failed || 0);
  }
  function value(c, key) { return key === "failed_tests" ? failedTests(c) : c[key]; }
  function matches(c, s) {
    if (s.q && c.task.toLowerCase().indexOf(s.q.toLowerCase()) < 0 && c.key.toLowerCase().indexOf(s.q.toLowerCase()) < 0) return false;
    if (s.arm && c.arm !== s.arm) return false;
    if (s.resolved === "yes" && c.resolved !== true) return false;
    if (s.resolved === "no" && c.resolved !== false) return false;
    if (s.error === "none" && c.error_kind !== null) return false;
    if (s.error && s.error !== "none" && c.error_kind !== s.error) return false;
    if (s.fired === "yes" && c.skill_fired !== true) return false;
    if (s.fired === "no" && c.skill_fired !== false) return false;
    if (s.fired === "na" && c.skill_fired !== null) return false;
    return true;
  }
  function compareValues(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a) < String(b) ? -1 : 1;
  }
  function select(name, label, options, current, state) {
    var node = el("select", "");
    node.name = name;
    options.forEach(function (o) {
      var opt = el("option", "", o[1]);
      opt.value = o[0];
      if (o[0] === current) opt.selected = true;
      node.appendChild(opt);
    });
    node.addEventListener("change", function () { state[name] = node.value; go(state, true); });
    return el("label", "", label, node);
  }
  function uniq(key) {
    var seen = [];
    cells.forEach(function (c) { if (c[key] !== null && seen.indexOf(c[key]) < 0) seen.push(c[key]); });
    return seen.sort();
  }
  function firingSection() {
    var firing = data.firing;
    if (!firing || !firing.arms || !firing.arms.length) return null;
    var table = el("table", "firing", el("tr", "", el("th", "", "arm"), el("th", "", "expected"),
      el("th", "", "valid cells"), el("th", "", "fired"), el("th", "", "unknown"), el("th", "", "share")));
    firing.arms.forEach(function (arm) {
      arm.expected.forEach(function (x) {
        table.appendChild(el("tr", "", el("td", "", arm.arm), el("td", "mono", x.kind + " " + x.name),
          el("td", "num", fmt(x.cells)), el("td", "num", fmt(x.fired)), el("td", "num", fmt(x.unknown)),
          el("td", "num", fmt(x.share, 3))));
      });
    });
    return [el("h2", "", "Did the treatment fire"), el("p", "label", firing.note), table];
  }
  function renderIndex(state) {
    document.body.dataset.state = "index";
    var sweep = data.sweep;
    add(app, el("h1", "", "workflow-bench cells"));
    if (sweep.scripted) add(app, el("p", "notice", "SCRIPTED PROVIDER: NOT A MODEL MEASUREMENT."));
    add(app, el("p", "", "model ", el("code", "", sweep.model), "; provider ", el("code", "", sweep.provider),
      "; status ", el("code", "", sweep.status), "; ", String(cells.length), " cell(s). ",
      rawLink("report.html", "report.html"), " · ", rawLink("results.jsonl", "results.jsonl")));
    add(app, firingSection());
    var search = el("input", "");
    search.type = "search"; search.name = "q"; search.placeholder = "task contains…"; search.value = state.q;
    search.addEventListener("input", function () { state.q = search.value; refocus = true; go(state, true); });
    if (refocus) { refocus = false; setTimeout(function () { search.focus(); search.setSelectionRange(search.value.length, search.value.length); }, 0); }
    add(app, el("div", "filters",
      el("label", "", "task", search),
      select("arm", "arm", [["", "any"]].concat(uniq("arm").map(function (a) { return [a, a]; })), state.arm, state),
      select("resolved", "resolved", [["", "any"], ["yes", "yes"], ["no", "no"]], state.resolved, state),
      select("error", "error kind", [["", "any"], ["none", "none"]].concat(uniq("error_kind").map(function (k) { return [k, k]; })), state.error, state),
      select("fired", "skill fired", [["", "any"], ["yes", "yes"], ["no", "no"], ["na", "n/a"]], state.fired, state)));
    var shown = cells.filter(function (c) { return matches(c, state); });
    if (state.sort) {
      var sign = state.dir === "desc" ? -1 : 1;
      shown = shown.slice().sort(function (a, b) {
        var cmp = compareValues(value(a, state.sort), value(b, state.sort));
        return cmp === 0 ? 0 : (value(a, state.sort) === null || value(b, state.sort) === null ? cmp : sign * cmp);
      });
    }
    var head = el("tr", "");
    COLUMNS.forEach(function (col) {
      var th = el("th", "sortable", col[1]);
      th.dataset.column = col[0];
      if (state.sort === col[0]) th.classList.add(state.dir === "desc" ? "sorted-desc" : "sorted-asc");
      th.addEventListener("click", function () {
        state.dir = state.sort === col[0] && state.dir === "asc" ? "desc" : "asc";
        state.sort = col[0];
        go(state, true);
      });
      head.appendChild(th);
    });
    var table = el("table", "cells", head);
    var frag = document.createDocumentFragment();
    shown.forEach(function (c) {
      var tr = el("tr", "cell-row");
      tr.dataset.key = c.key;
      COLUMNS.forEach(function (col) {
        var v = value(c, col[0]);
        var td;
        if (col[0] === "resolved" || col[0] === "skill_fired") td = el("td", "", yesNo(v));
        else td = el("td", col[2] || "", fmt(v, col[3]));
        tr.appendChild(td);
      });
      tr.addEventListener("click", function () { go({ cell: c.key }, false); });
      frag.appendChild(tr);
    });
    table.appendChild(frag);
    add(app, el("p", "count", String(shown.length) + " of " + String(cells.length) + " cell(s) shown"));
    add(app, table);
  }

  // ── one cell ──────────────────────────────────────────────────────────────
  function usageText(u) {
    if (!u) return "tokens n/a";
    return "in " + fmt(u.input_tokens) + " · cache write " + fmt(u.cache_creation_input_tokens) +
      " · cache read " + fmt(u.cache_read_input_tokens) + " · out " + fmt(u.output_tokens);
  }
  function judgeSection(name, j) {
    var parts = [el("h3", "", name + " ", yesNo(j.passed)),
      j.detail ? el("pre", "", j.detail) : null,
      el("p", "label", "tests run " + fmt(j.tests_run) + ", passed " + fmt(j.tests_passed) + ", skipped " + fmt(j.tests_skipped))];
    if (j.tests && j.tests.length) {
      var table = el("table", "tests", el("tr", "", el("th", "", "test"), el("th", "", "outcome"), el("th", "", "message")));
      j.tests.forEach(function (t) {
        var tr = el("tr", "test-row", el("td", "mono test-id", t.id),
          el("td", OUTCOME_CLASS[t.outcome] || "unknown", t.outcome), el("td", "", t.message ? el("pre", "", t.message) : "—"));
        tr.dataset.outcome = OUTCOME_CLASS[t.outcome] ? t.outcome : "other";
        table.appendChild(tr);
      });
      parts.push(table);
    } else {
      parts.push(el("p", "label", "no per-test outcomes recorded"));
    }
    if (j.tests_omitted) parts.push(truncatedNote(String(j.tests_omitted) + " more test(s) not listed"));
    if (j.output) parts.push(el("details", "", el("summary", "", "output (tail)"), el("pre", "", j.output)));
    return el("section", "judge judge-" + (name === "verify" ? "verify" : "oracle"), parts);
  }
  function diagnosticsSection(d) {
    var usage = el("table", "", el("tr", "", el("th", "", "view"), el("th", "", "input"), el("th", "", "cache write"),
      el("th", "", "cache read"), el("th", "", "output")));
    Object.keys(d.usage).forEach(function (view) {
      var u = d.usage[view] || {};
      usage.appendChild(el("tr", "", el("td", "", view), el("td", "num", fmt(u.input_tokens)),
        el("td", "num", fmt(u.cache_creation_input_tokens)), el("td", "num", fmt(u.cache_read_input_tokens)),
        el("td", "num", fmt(u.output_tokens))));
    });
    var limits = d.resource_limits;
    return el("section", "diagnostics", el("h3", "", "Evidence diagnostics"),
      el("ul", "",
        el("li", "", "wire vs stream: ", String(d.stream_items_not_on_wire), " stream item(s) the wire never saw; ",
          String(d.wire_only_exchanges), " wire exchange(s) the stream does not show"),
        el("li", "", "relay refusals: ", fmt(d.relay_refused_requests)),
        el("li", "", "transcript missing: ", fmt(d.transcript_missing)),
        el("li", "", "resource limits: ", limits ? "memory " + fmt(limits.memory_mib) + " MiB, pids " + fmt(limits.pids) +
          ", disk " + fmt(limits.disk_mib) + " MiB, cpus " + fmt(limits.cpus) +
          (limits.cell_uid == null ? "" : ", cell uid " + fmt(limits.cell_uid)) + (limits.sampled.length ? "; hit: " + limits.sampled.join(", ") : "; none hit") : "n/a"),
        d.evidence.length ? el("li", "", "diagnostics: ", el("ul", "", d.evidence.map(function (x) { return el("li", "", el("pre", "", x)); }))) : null),
      el("p", "label", "usage per view (the wire is of record; the stream is the agent-writable second view)"), usage);
  }
  function patchSection(p, links) {
    var section = el("section", "patch", el("h3", "", "Patch"));
    if (!p) { add(section, el("p", "label", "no patch recorded")); return section; }
    if (!p.files.length) add(section, el("p", "label", "the patch is empty"));
    p.files.forEach(function (f) {
      var lines = el("pre", "diff");
      f.lines.forEach(function (l) { lines.appendChild(el("span", { hunk: "hunk", add: "add", del: "del", ctx: "ctx" }[l[0]] || "meta", l[1])); });
      var head = el("div", "diff-head", el("span", "diff-path", f.path), " ", el("span", "badge", f.status), " +" + f.added + " −" + f.removed);
      add(section, el("div", "diff-file", head, lines));
    });
    if (p.truncated) add(section, truncatedNote(String(p.omitted_lines) + " line(s) of the patch not shown; open the raw patch"));
    return section;
  }
  function toolNode(t) {
    var cls = "tool" + (t.skill ? " skill" : "") + (t.is_error ? " error" : "") + (t.on_wire === false ? " off-wire" : "");
    var summary = el("summary", "", el("span", "tool-name", t.name),
      t.skill ? el("span", "skill-tag", "skill: " + t.skill) : null,
      t.is_error ? el("span", "badge bad", "error") : null,
      t.on_wire === false ? el("span", "badge bad", "not on the wire") : null,
      " ", el("span", "label mono", t.input.slice(0, 120).replace(/\s+/g, " ")));
    var node = el("details", cls, summary,
      el("div", "label", "input"), el("pre", "", t.input), t.input_cut ? truncatedNote(t.input_cut + " characters of the input") : null,
      el("div", "label", "output"), t.result === null ? el("p", "label", "no result in the stream") : el("pre", "", t.result),
      t.result_cut ? truncatedNote(t.result_cut + " characters of the output") : null);
    node.dataset.tool = t.name;
    if (t.children.length) {
      node.open = true;
      add(node, el("div", "subagent", el("div", "label", "subagent"), items(t.children)));
    }
    return node;
  }
  function items(list) {
    return list.map(function (item) {
      if (item.kind === "user") {
        return el("details", "user", el("summary", "label", item.synthetic ? "context the CLI injected (e.g. skill instructions)" : "user message"),
          el("pre", "user-text", item.text), item.cut ? truncatedNote(item.cut + " characters") : null);
      }
      var head = el("div", "turn-head", "turn · ", usageText(item.usage),
        item.usage_source === "stream" ? " (stream, not on the wire)" : "",
        item.cost_usd !== null ? " · ≈ $" + item.cost_usd.toFixed(5) : "",
        item.on_wire === false ? el("span", "badge bad", "message not on the wire") : null);
      var blocks = item.blocks.map(function (b) {
        if (b.kind === "text") return [el("pre", "text", b.text), b.cut ? truncatedNote(b.cut + " characters") : null];
        if (b.kind === "thinking") return el("p", "label", "(thinking, not kept)");
        return toolNode(b);
      });
      return el("div", "turn", head, blocks);
    });
  }
  function sessionSection(s) {
    var head = el("h3", "", "Session " + s.index, s.phase ? " · " + s.phase : "", s.skill_role ? " · expected skill role " + s.skill_role : "");
    var result = s.result;
    var node = el("section", "session", head,
      el("p", "label", "session id ", fmt(s.session_id), "; ", String(s.exchanges), " wire exchange(s)",
        s.init ? "; model " + s.init.model : "",
        result ? "; result " + result.subtype + (result.is_error ? " (error)" : "") + ", " + fmt(result.num_turns) + " turn(s), cost $" + fmt(result.cost_usd, 6) : ""),
      el("p", "label", "≈ cost per turn: the session's cost (the CLI reports no finer figure) apportioned by tokens weighted 1 : 1.25 : 0.1 : 5 (input : cache write : cache read : output, Anthropic's price ratios)."),
      s.notes.length ? el("ul", "", s.notes.map(function (n) { return el("li", "", n); })) : null,
      s.stream_lines_unreadable ? el("p", "no", String(s.stream_lines_unreadable) + " transcript line(s) are not JSON") : null,
      items(s.items));
    if (s.omitted_items) add(node, truncatedNote(s.omitted_items + " later item(s) of this session exceed the cell's byte budget; open the raw transcript"));
    if (result && result.text) add(node, el("div", "label", "final message"), el("pre", "text", result.text));
    if (s.wire_only.length) {
      var table = el("table", "", el("tr", "", el("th", "", "request"), el("th", "", "status"), el("th", "", "agent"),
        el("th", "", "completed"), el("th", "", "tool calls"), el("th", "", "tokens")));
      s.wire_only.forEach(function (w) {
        table.appendChild(el("tr", "", el("td", "num", fmt(w.request)), el("td", "num", fmt(w.status)), el("td", "mono", fmt(w.agent_id)),
          el("td", "", yesNo(w.completed)), el("td", "mono", w.tool_uses.join(", ")), el("td", "", usageText(w.usage))));
      });
      add(node, el("div", "label", "wire exchanges the stream does not show"), table);
    }
    return node;
  }
  function compareControl(entry, state, side) {
    var others = cells.filter(function (c) { return c.task === entry.task && c.key !== entry.key; });
    if (side !== "main" || !others.length) return null;
    var node = el("select", "compare");
    node.name = "compare";
    var first = el("option", "", "open beside…"); first.value = ""; node.appendChild(first);
    others.forEach(function (c) {
      var opt = el("option", "", c.arm + " run " + c.run); opt.value = c.key;
      if (c.key === state.compare) opt.selected = true;
      node.appendChild(opt);
    });
    node.addEventListener("change", function () { go({ cell: state.cell, compare: node.value }, false); });
    return el("label", "", "compare with ", node);
  }
  function renderCell(pane, entry, doc, state, side) {
    pane.textContent = "";
    pane.dataset.key = entry.key;
    var s = doc.summary;
    add(pane, el("div", "pane-head", el("h2", "", entry.task + " / " + entry.arm + " / run " + entry.run),
      compareControl(entry, state, side), doc.truncated ? truncatedNote("parts of this cell exceed its byte budget") : null));
    add(pane, el("p", "", "resolved ", yesNo(s.resolved), " · error kind ", el("code", "", fmt(s.error_kind)),
      " · cost $", fmt(s.cost_usd), " · turns ", fmt(s.num_turns), " · duration ", fmt(s.duration_s), " s",
      " · skill invoked (wire) ", yesNo(s.skill_invoked)));
    if (s.error_detail) add(pane, el("pre", "no", s.error_detail));
    add(pane, el("p", "label", "raw files: ", doc.files.map(function (f, i) { return [i ? " · " : "", rawLink(f.path, f.label)]; })));
    // The oracle's verdict decides the cell: it comes first, above verify's (often long) test list.
    add(pane, judgeSection("oracle", doc.judgement.oracle), judgeSection("verify", doc.judgement.verify));
    add(pane, patchSection(doc.patch, doc.files));
    add(pane, el("h3", "", "Trajectory"), doc.sessions.map(sessionSection));
    add(pane, diagnosticsSection(doc.diagnostics));
    pane.dataset.loaded = "1";
  }
  function openPane(panes, key, state, side) {
    var pane = el("div", "pane", el("p", "label", "loading " + key + " …"));
    pane.dataset.side = side;
    panes.appendChild(pane);
    var entry = byKey.get(key);
    if (!entry) { pane.textContent = ""; add(pane, el("p", "no", "no cell " + key + " in this sweep")); pane.dataset.loaded = "missing"; return; }
    load(entry, function (doc) {
      if (!doc) { pane.textContent = ""; add(pane, el("p", "no", "the data file " + entry.file + " could not be loaded")); pane.dataset.loaded = "error"; return; }
      renderCell(pane, entry, doc, state, side);
    });
  }
  function renderCells(state) {
    document.body.dataset.state = "cell";
    var back = el("a", "", "← all cells");
    back.setAttribute("href", "#");
    add(app, el("p", "", back));
    var panes = el("div", "panes");
    add(app, panes);
    openPane(panes, state.cell, state, "main");
    if (state.compare) openPane(panes, state.compare, state, "compare");
  }
  function render() {
    var state = readState();
    app.textContent = "";
    if (state.cell) renderCells(state); else renderIndex(state);
  }
  render();
})();
