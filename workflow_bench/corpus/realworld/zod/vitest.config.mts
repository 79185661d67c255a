// The task repository's test configuration (the upstream repository's own is not in the npm
// tarball): zod's tests import the package by name, which resolves to the sources here.
const root = process.cwd();
export default {
  resolve: {
    alias: [
      { find: /^zod\/v4\/core$/, replacement: `${root}/src/v4/core/index.ts` },
      { find: /^zod\/v4\/locales$/, replacement: `${root}/src/v4/locales/index.ts` },
      { find: /^zod\/v4-mini$/, replacement: `${root}/src/v4-mini/index.ts` },
      { find: /^zod\/v4$/, replacement: `${root}/src/v4/index.ts` },
      { find: /^zod\/mini$/, replacement: `${root}/src/mini/index.ts` },
      { find: /^zod\/v3$/, replacement: `${root}/src/v3/index.ts` },
      { find: /^zod$/, replacement: `${root}/src/index.ts` },
    ],
  },
  test: { include: ["src/**/*.test.ts"] },
};
