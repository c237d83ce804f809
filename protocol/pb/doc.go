// Package pb holds the messages of Diego BBS's protobuf-over-HTTP protocol, written from the
// protocol's facts (field numbers, presence, packing) so that stock BBS clients read and write
// the same bytes, plus our extensions for updatable LRPs at field numbers of 1000 and above
// (see extensions.proto).
//
// The .pb.go files are generated: edit the .proto files and run `make proto`.
package pb
