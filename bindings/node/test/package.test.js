'use strict';
// The package as users get it: `npm pack` of the folder gives a tarball
// carrying the addon, `npm install --offline` puts it into a scratch
// project, and require('hearth') and import 'hearth' work there (no
// registry: the package has no dependencies).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { top, MODEL } = require('./common');

const pkgDir = path.join(__dirname, '..');
const addon = process.env.HEARTH_NODE_ADDON ? path.resolve(process.env.HEARTH_NODE_ADDON) : path.join(top, 'build', 'hearth.node');
const ENCODERS = path.join(top, 'tests', 'reference', 'encoder');

test('npm pack, then npm install --offline in a scratch project, then require and import', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-npm-'));
  try {
    // pack a copy, so the working tree is left alone
    const src = path.join(tmp, 'pkg');
    for (const f of ['package.json', 'index.js', 'index.mjs', 'index.d.ts', path.join('scripts', 'pack-addon.js')]) {
      fs.mkdirSync(path.dirname(path.join(src, f)), { recursive: true });
      fs.copyFileSync(path.join(pkgDir, f), path.join(src, f));
    }
    const env = { ...process.env, HEARTH_NODE_ADDON: addon, npm_config_cache: path.join(tmp, 'npm-cache') };
    const npm = (args, cwd, extraEnv = env) =>
      execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, env: extraEnv, encoding: 'utf8' });
    const tarball = path.join(tmp, npm(['pack', '--pack-destination', tmp], src).trim().split('\n').pop());
    assert.match(path.basename(tarball), /^hearth-\d+\.\d+\.\d+\.tgz$/);
    const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    for (const f of ['package/hearth.node', 'package/index.js', 'package/index.mjs', 'package/index.d.ts'])
      assert.ok(files.includes(f), `${f} missing from the tarball: ${files.join(' ')}`);
    // a CUDA build's module travels with the addon (the library loads it from the addon's folder)
    const cudaModule = fs.existsSync(path.join(path.dirname(addon), 'libhearth-cuda.so'));
    assert.strictEqual(files.includes('package/libhearth-cuda.so'), cudaModule, `tarball: ${files.join(' ')}`);
    assert.ok(!fs.existsSync(path.join(src, 'hearth.node')), 'postpack leaves no copy behind');
    assert.ok(!fs.existsSync(path.join(src, 'libhearth-cuda.so')), 'postpack leaves no copy behind');

    const proj = path.join(tmp, 'proj');
    fs.mkdirSync(proj);
    fs.writeFileSync(path.join(proj, 'package.json'), JSON.stringify({ name: 'scratch', version: '1.0.0', private: true }));
    const userEnv = { ...env };
    delete userEnv.HEARTH_NODE_ADDON; // the installed package must find its own addon
    delete userEnv.HEARTH_CUDA_MODULE; // ... and its own CUDA module
    npm(['install', '--offline', tarball], proj, userEnv);
    assert.ok(fs.existsSync(path.join(proj, 'node_modules', 'hearth', 'hearth.node')));

    const run = (args) => execFileSync(process.execPath, args, { cwd: proj, env: userEnv, encoding: 'utf8' });
    const cjs = run([
      '-e',
      `const { Model, HearthError, systemInfo } = require('hearth');
       const m = new Model(${JSON.stringify(MODEL)});
       m.generate('The capital of France is', { maxTokens: 4, temperature: 0 })
         .then((t) => { console.log(JSON.stringify(t)); console.log(typeof HearthError, systemInfo().split(';')[0]); m.dispose(); });`,
    ]);
    assert.match(cjs, /^" Paris\.[^"]*"\nfunction hearth /);
    if (cudaModule) {
      const gpu = run(['-e', "console.log(require('hearth').systemInfo())"]);
      assert.doesNotMatch(gpu, /no CUDA module/, 'the installed package did not find its CUDA module');
    }
    const esm = run([
      '--input-type=module',
      '-e',
      `import { Model, supportsGpuOffload } from 'hearth';
       const m = await Model.load(${JSON.stringify(MODEL)});
       const r = await Model.load(${JSON.stringify(path.join(ENCODERS, 'tiny-reranker-f32.gguf'))});
       const e = await Model.load(${JSON.stringify(path.join(ENCODERS, 'tiny-bert-f32.gguf'))});
       const scores = await r.rerank('what is a cat?', ['a cat is an animal.', 'paris is in france.']);
       const vecs = await e.embed(['hello', 'the cat sat on the mat.']);
       console.log(m.nLayer, typeof supportsGpuOffload(), scores instanceof Float32Array, scores.length,
                   vecs.length, vecs[1] instanceof Float32Array && vecs[1].length === e.nEmbd);
       for (const x of [m, r, e]) x.dispose();`,
    ]);
    assert.strictEqual(esm.trim(), '30 boolean true 2 2 true');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
