'use strict';
// npm pack's prepack and postpack steps: `node scripts/pack-addon.js copy`
// puts the built addon beside index.js, where the packed package carries it
// (from $HEARTH_NODE_ADDON, else the repository's release build
// ../../build/hearth.node); `node scripts/pack-addon.js remove` takes it out
// again, so the working tree keeps no stale copy that index.js would load
// before a fresher build.
const fs = require('node:fs');
const path = require('node:path');

const here = path.join(__dirname, '..');
const dest = path.join(here, 'hearth.node');

if (process.argv[2] === 'remove') {
  fs.rmSync(dest, { force: true });
} else {
  const src = process.env.HEARTH_NODE_ADDON
    ? path.resolve(process.env.HEARTH_NODE_ADDON)
    : path.join(here, '..', '..', 'build', 'hearth.node');
  if (!fs.existsSync(src)) {
    console.error(`hearth: ${src} not found: build it first (scripts/build.sh build) or set HEARTH_NODE_ADDON`);
    process.exit(1);
  }
  fs.copyFileSync(src, dest);
}
