package model

// MaxRequestBytes is the largest request body either API accepts, the JSON API and the BBS
// protocol alike (API.md: 1 MiB): a body is read whole before it is decoded, so the limit
// bounds what one request costs a server in memory. A larger body is refused: RequestTooLarge
// in the JSON API, InvalidRequest in the protocol, as BBS answers it.
const MaxRequestBytes = 1 << 20
