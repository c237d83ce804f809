package executor

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// OutputTailBytes is how much of the end of an instance's output a crash reason looks at.
// The line that says why an app died ("Error: cannot bind port") is short and comes last, and
// a crash-looping instance is read at every crash, so a small read is enough.
const OutputTailBytes = 4 << 10

// maxLastOutput bounds the quoted line in a crash reason, escapes included: the reason is
// stored with every crash and shown in a rollout's failure, where one line of context helps
// and a page of it does not.
const maxLastOutput = 256

// ellipsis marks where a quoted line was cut.
const ellipsis = "…"

// OutputTailer is implemented by instances whose output the cell keeps, so that a crash
// reason can quote the last line the instance wrote, which usually says why it died.
type OutputTailer interface {
	// OutputTail returns the end of the instance's output, at most OutputTailBytes (a tail
	// of exactly that length may begin in the middle of a line); nil when there is none.
	OutputTail() []byte
}

// WithLastOutput appends to a crash reason the last line of tail with something in it, quoted
// and bounded: `exit status 1; last output: "Error: cannot bind port"`. Without such a line
// the reason is returned as it is.
func WithLastOutput(reason string, tail []byte) string {
	line := lastLine(tail)
	if line == "" {
		return reason
	}
	return reason + "; last output: " + line
}

// crashedWithOutput is a crash of inst whose reason quotes inst's last line of output, when
// its backend keeps the output. It must be called before the instance is stopped, which may
// remove the output.
func crashedWithOutput(inst Instance, reason string) Result {
	if t, ok := inst.(OutputTailer); ok {
		reason = WithLastOutput(reason, t.OutputTail())
	}
	return crashed(reason)
}

// lastLine finds the last line of tail that is not blank once terminal escape sequences are
// removed, and quotes it; "" when there is none.
func lastLine(tail []byte) string {
	mayBeCut := len(tail) >= OutputTailBytes
	for rest := tail; len(rest) > 0; {
		i := bytes.LastIndexByte(rest, '\n')
		line := bytes.TrimSpace(stripEscapes(rest[i+1:]))
		if len(line) > 0 {
			return quote(line, mayBeCut && i < 0)
		}
		rest = rest[:max(i, 0)]
	}
	return ""
}

// quote quotes line as Go does, so that control characters and bytes that are not UTF-8
// appear escaped rather than garbling logs and terminals, and cuts it, on a character
// boundary, so that what is between the quotes is at most maxLastOutput bytes. cutStart marks
// a line whose beginning is missing already.
func quote(line []byte, cutStart bool) string {
	out := make([]byte, 0, maxLastOutput+len(`""`))
	out = append(out, '"')
	if cutStart {
		out = append(out, ellipsis...)
	}
	limit := 1 + maxLastOutput // the opening quote and the content
	fit := len(out)            // the longest content that leaves room for an ellipsis
	var esc []byte
	for len(line) > 0 && len(out) <= limit {
		if len(out) <= limit-len(ellipsis) {
			fit = len(out)
		}
		_, size := utf8.DecodeRune(line)
		esc = strconv.AppendQuote(esc[:0], string(line[:size]))
		out = append(out, esc[1:len(esc)-1]...)
		line = line[size:]
	}
	if len(out) > limit {
		out = append(out[:fit], ellipsis...)
	}
	return string(append(out, '"'))
}

// stripEscapes removes the terminal escape sequences (CSI: colours, cursor moves) that
// loggers wrap around their words: escaped, they would bury the words. An incomplete
// sequence is kept, to be escaped.
func stripEscapes(b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '[' {
			j := i + 2
			for j < len(b) && b[j] >= 0x20 && b[j] <= 0x3f { // parameter and intermediate bytes
				j++
			}
			if j < len(b) && b[j] >= 0x40 && b[j] <= 0x7e { // the final byte
				i = j
				continue
			}
		}
		out = append(out, b[i])
	}
	return out
}
