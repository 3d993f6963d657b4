// Builds the console (ui/) into dist/ui/: one JS and one CSS bundle with
// content-hashed names, and index.html pointing at them. sluice serves these
// files from memory under /ui. Plain JS so that it runs before tsc.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';

const root = new URL('../', import.meta.url);
const out = new URL('dist/ui/', root);
mkdirSync(new URL('assets/', out), { recursive: true });

const result = await build({
  entryPoints: [new URL('ui/src/main.tsx', root).pathname],
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  outdir: new URL('assets/', out).pathname,
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});
const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error(`console build produced ${outputs.join(', ')}`);
const html = readFileSync(new URL('ui/index.html', root), 'utf8').replace('{{js}}', js).replace('{{css}}', css);
writeFileSync(new URL('index.html', out), html);
const size = (f) => readFileSync(new URL(`assets/${f}`, out)).length;
console.log(`console: ${js} ${(size(js) / 1024).toFixed(1)} KB, ${css} ${(size(css) / 1024).toFixed(1)} KB`);
