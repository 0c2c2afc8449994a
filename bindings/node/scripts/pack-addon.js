'use strict';
// npm pack's prepack and postpack steps: `node scripts/pack-addon.js copy`
// puts the built addon beside index.js, where the packed package carries it
// (from $HEARTH_NODE_ADDON, else the repository's release build
// ../../build/hearth.node), with the CUDA backend's module libhearth-cuda.so
// when the build has one beside the addon (the library loads it from the
// addon's folder); `node scripts/pack-addon.js remove` takes them out again,
// so the working tree keeps no stale copy that index.js would load before a
// fresher build.
const fs = require('node:fs');
const path = require('node:path');

const here = path.join(__dirname, '..');
const dest = path.join(here, 'hearth.node');
const CUDA_MODULE = 'libhearth-cuda.so';

if (process.argv[2] === 'remove') {
  fs.rmSync(dest, { force: true });
  fs.rmSync(path.join(here, CUDA_MODULE), { force: true });
} else {
  const src = process.env.HEARTH_NODE_ADDON
    ? path.resolve(process.env.HEARTH_NODE_ADDON)
    : path.join(here, '..', '..', 'build', 'hearth.node');
  if (!fs.existsSync(src)) {
    console.error(`hearth: ${src} not found: build it first (scripts/build.sh build) or set HEARTH_NODE_ADDON`);
    process.exit(1);
  }
  fs.copyFileSync(src, dest);
  const cudaModule = path.join(path.dirname(src), CUDA_MODULE);
  if (fs.existsSync(cudaModule)) fs.copyFileSync(cudaModule, path.join(here, CUDA_MODULE));
}
