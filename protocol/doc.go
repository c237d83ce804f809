// Package protocol serves the real Diego BBS's own protocol — protobuf messages POSTed over
// HTTP/1.1, answered with status 200 and an Error in field 1 — beside our JSON API, over the
// same store and the same rules, so that Cloud Controller, cfdot, route-emitter, tps and
// ssh-proxy work unchanged (../shared/design/BBS-PROTOCOL.md). Old clients see exactly what a
// stock BBS would show them; the seed's extensions (definition ids, definition updates,
// cancel, rollback, LRPDeployments) ride on field numbers >= 1000 and routes of their own.
package protocol
