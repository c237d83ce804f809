package model

import "strings"

// MaxRequestBytes is the largest request body either API accepts, the JSON API and the BBS
// protocol alike (API.md: 1 MiB): a body is read whole before it is decoded, so the limit
// bounds what one request costs a server in memory. A larger body is refused: RequestTooLarge
// in the JSON API, InvalidRequest in the protocol, as BBS answers it.
const MaxRequestBytes = 1 << 20

// DescribeJSONType names a Go type (as json.UnmarshalTypeError gives it) the way a JSON client
// thinks of it, for the message of a value of the wrong type.
func DescribeJSONType(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer in range (" + t + ")"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map["), strings.Contains(t, "."):
		return "an object"
	}
	return t
}
