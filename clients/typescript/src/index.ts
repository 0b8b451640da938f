export { CairnClient, CairnError } from "./client.js";
export type { ClientOptions, Delta, EventView, ExportParams, ImportResult, StreamEvent } from "./client.js";
export type * from "./types.js";
