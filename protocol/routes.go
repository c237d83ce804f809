package protocol

// routes registers every route this listener serves; the rest answer a plain-text 404.
// Paths and revisions are BBS's (BBS-PROTOCOL.md §1.1).
func (s *Server) routes() {
	route(s, "/v1/ping", s.ping)
	route(s, "/v1/domains/list", s.domains)
	route(s, "/v1/domains/upsert", s.upsertDomain)
	route(s, "/v1/cells/list.r1", s.cells)
}
