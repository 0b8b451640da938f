export { CairnClient, CairnError } from "./client.js";
export type { ClientOptions, Delta, EventView, StreamEvent } from "./client.js";
export type * from "./types.js";
