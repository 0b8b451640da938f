// Package temporal hosts sessions as Temporal workflows, one per session
// (id "{universe}/{session}"), driving the same pure core and the same
// executors as runtime/local.
//
// The workflow holds the reducer state (rehydrated from the session log by an
// activity, as a checkpoint) and asks the core for one intent at a time,
// through the loop both hosts share (runtime.Pump, Flush, AdmitAndAppend);
// what is the workflow's own is how it appends, dispatches and waits.
// Everything that crosses the workflow/activity boundary is ids, facts and
// ContentRefs: proposals to append (event payloads carry refs and bounded
// previews, never message or file bytes), a planned turn's id and fingerprint
// (the generate activity rebuilds the context from the log and checks the
// fingerprint), one tool call's id and argument ref. Provider responses, tool
// outputs and user text live in CAS.
//
// Client commands arrive as Temporal updates, so admission results (or typed
// rejections) return synchronously; a query serves status without touching
// the log.
package temporal
