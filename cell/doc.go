// Package cell is the cell agent, Diego's rep: it announces the cell with a capacity and a
// zone, accepts work from placement and stop requests on a small HTTP API, runs instances
// through an executor, and keeps the BBS in agreement with its containers — on every
// container event and on a poll, following seed 003's reconciliation table (Decide). A cell
// told to drain evacuates: it takes no new work and keeps its RUNNING instances serving, as
// EVACUATING, until their replacements run elsewhere.
//
// The API's wire types and the client the BBS side calls it with are package cellapi, so
// that the auctioneer and the API reach cells without importing the agent and its executor.
package cell
