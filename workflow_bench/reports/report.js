// report.html's page script: draws the embedded JSON with Chart.js; no fetch, no CDN.
// Keep the data-* hooks in sync with tests/component/test_html_chromium.py.
(function () {
  const errors = document.getElementById('page-errors');
  window.addEventListener('error', (e) => { errors.textContent += 'error: ' + e.message + '\n'; });
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const palette = ['#3b6fd4', '#e0822d', '#2e9e5b', '#c4384a', '#8456c9',
                   '#7a6a55', '#d65db1', '#6f7b8a', '#b0a020', '#2ab3c0'];
  const color = (i) => palette[i % palette.length];
  let drawn = 0;

  function draw(id, config) {
    const canvas = document.getElementById(id);
    if (!canvas) return;
    config.options = Object.assign(
      {animation: false, responsive: true, maintainAspectRatio: false}, config.options || {});
    new Chart(canvas, config);
    let points = 0;
    for (const ds of config.data.datasets) {
      for (const v of ds.data) if (v !== null && v !== undefined) points++;
    }
    canvas.dataset.points = String(points);
    drawn++;
  }
  const title = (text) => ({title: {display: true, text: text}});
  const arms = data.arms;

  // 1. resolve rate vs median cost per arm; the 95 % CI as a vertical segment
  const scatter = [];
  arms.forEach((arm, i) => {
    const s = data.arm_summary[arm];
    if (!s || s.median_cost_usd === null || s.resolve_rate === null) return;
    scatter.push({label: arm, type: 'scatter', data: [{x: s.median_cost_usd, y: s.resolve_rate}],
                  backgroundColor: color(i), pointRadius: 6});
    if (s.resolve_rate_ci95) {
      scatter.push({label: arm + ' 95% CI', type: 'line', showLine: true, borderColor: color(i),
                    pointRadius: 0, borderWidth: 2,
                    data: [{x: s.median_cost_usd, y: s.resolve_rate_ci95[0]},
                           {x: s.median_cost_usd, y: s.resolve_rate_ci95[1]}]});
    }
  });
  draw('chart-rate-cost', {type: 'scatter', data: {datasets: scatter}, options: {
    plugins: title('Resolve rate vs median cost per arm (95% CI)'),
    scales: {x: {grace: '15%', title: {display: true, text: 'median cost $ (valid runs)'}},
             y: {min: 0, max: 1, title: {display: true, text: 'resolve rate'}}}}});

  // 2. per-task median cost by arm
  draw('chart-task-cost', {type: 'bar', data: {labels: data.tasks, datasets: arms.map((arm, i) => ({
    label: arm, backgroundColor: color(i),
    data: data.tasks.map((t) => (data.task_cost[t] || {})[arm] ?? null)}))},
    options: {plugins: title('Median cost $ per task and arm')}});

  // 3. tokens per arm in the three accounting views
  const views = ['main loop', 'transcripts', 'provider'];
  draw('chart-tokens', {type: 'bar', data: {labels: arms, datasets: views.map((v, i) => ({
    label: v, backgroundColor: color(i), data: arms.map((a) => (data.tokens[a] || {})[v] ?? null)}))},
    options: {plugins: title('Total tokens per arm: main loop vs transcripts (incl. subagents) vs provider')}});

  // 4. error kinds per arm (stacked)
  if (data.error_kinds.length) {
    draw('chart-errors', {type: 'bar', data: {labels: arms, datasets: data.error_kinds.map((k, i) => ({
      label: k, backgroundColor: color(i), data: arms.map((a) => (data.errors[a] || {})[k] ?? 0)}))},
      options: {plugins: title('Error kinds per arm (runs)'),
                scales: {x: {stacked: true}, y: {stacked: true, beginAtZero: true}}}});
  }

  // 5. promotion: the candidate's per-task improvement over its incumbent
  const promo = data.promotion_chart;
  if (promo.labels.length) {
    draw('chart-promotion', {type: 'bar', data: {labels: promo.labels, datasets: promo.datasets.map((d, i) => ({
      label: d.label, backgroundColor: color(i), data: d.data}))},
      options: {plugins: title('Candidate vs incumbent per task (+ is better)')}});
  }
  document.body.dataset.charts = String(drawn);
})();
