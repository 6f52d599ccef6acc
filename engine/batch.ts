// The engine's batch limit, in a file of its own so that the service's limits table (service/api/limits.ts) can
// take it without loading the engine (onnxruntime).

/** Prompts one generate call takes at most. */
export const MAX_BATCH = 8;
