// hearth for Node.js as an ES module: the same objects as index.js.
import hearth from './index.js';

export const { Model, HearthError, gpuDevices, supportsGpuOffload, systemInfo, jsonSchemaToGrammar } = hearth;
