// The dashboard's bundle: `vite build --config dashboard/vite.config.ts` from the
// project root writes dist/dashboard, which keyhold serves at /dashboard/.
// JSX goes through Vite's own (oxc) transform with Preact's runtime.
import { defineConfig } from "vite";

export default defineConfig({
  root: "dashboard",
  base: "/dashboard/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "../dist/dashboard",
    emptyOutDir: true,
    // No inline polyfill script: the page's policy allows scripts from this origin only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
});
