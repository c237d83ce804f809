package process

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/executor"
)

// outputPoll is how often the output file is read once it has been read to its end.
const outputPoll = 100 * time.Millisecond

// maxLine is the longest line printed as one; a longer line arrives in pieces, each printed
// as a line.
const maxLine = 64 * 1024

// output carries an instance's stdout and stderr to the executor's log, one prefixed line at a
// time. All processes of the instance append to one file, which the pump follows as `tail -f`
// does. A file, not a pipe: it is a real file descriptor (so that os/exec does not wait for a
// daemonized child to close its copy before Wait returns), and it outlives the cell agent —
// a pipe would break with a killed agent and kill, by SIGPIPE, every process that then
// writes a line, before the restarted agent could adopt them.
type output struct {
	dst    io.Writer
	prefix string
	// w is the processes' stdout and stderr (nil for an adopted instance's output, which
	// its processes already hold); r is the pump's.
	w, r   *os.File
	stop   chan struct{}
	pumped chan struct{}
	mu     sync.Mutex // serialises the pump's lines with those written without the file
	once   sync.Once
}

// newOutput creates the output file at path and follows it from its start.
func newOutput(dst io.Writer, prefix, path string) (*output, error) {
	w, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create output file: %w", err)
	}
	r, err := os.Open(path)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open output file: %w", err)
	}
	return startOutput(dst, prefix, w, r), nil
}

// followOutput follows the output file of an adopted instance from its end: what was written
// while no agent read it stays in the file.
func followOutput(dst io.Writer, prefix, path string) (*output, error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open output file: %w", err)
	}
	if _, err := r.Seek(0, io.SeekEnd); err != nil {
		r.Close()
		return nil, fmt.Errorf("open output file: %w", err)
	}
	return startOutput(dst, prefix, nil, r), nil
}

func startOutput(dst io.Writer, prefix string, w, r *os.File) *output {
	if dst == nil {
		dst = io.Discard
	}
	o := &output{dst: dst, prefix: prefix, w: w, r: r, stop: make(chan struct{}), pumped: make(chan struct{})}
	go o.pump()
	return o
}

func (o *output) pump() {
	defer close(o.pumped)
	buf := make([]byte, 32*1024)
	var line []byte
	stopping := false
	for {
		n, err := o.r.Read(buf)
		line = append(line, buf[:n]...)
		for {
			i := bytes.IndexByte(line, '\n')
			if i < 0 && len(line) < maxLine {
				break
			}
			if i < 0 || i >= maxLine {
				i = maxLine - 1
			}
			o.write(line[:i+1])
			line = line[i+1:]
		}
		switch {
		case err != nil && !errors.Is(err, io.EOF):
			return
		case n > 0:
			continue
		case stopping:
			if len(line) > 0 {
				o.write(line)
			}
			return
		}
		select {
		case <-o.stop:
			stopping = true // one more read: what the processes wrote last
		case <-time.After(outputPoll):
		}
	}
}

// line writes a message of our own (emit_progress, notes) among the processes' output: into
// the file when there is one, so that it keeps its place among their lines.
func (o *output) line(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if o.w != nil {
		if _, err := o.w.WriteString(text); err == nil {
			return
		}
	}
	o.write([]byte(text))
}

func (o *output) write(text []byte) {
	buf := make([]byte, 0, len(o.prefix)+len(text)+1)
	buf = append(buf, o.prefix...)
	buf = append(buf, text...)
	if buf[len(buf)-1] != '\n' {
		buf = append(buf, '\n')
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dst.Write(buf) // a failing log must not fail the instance
}

// close ends the pump once the processes have exited, after it has read what they wrote.
func (o *output) close() {
	o.once.Do(func() {
		if o.w != nil {
			o.w.Close()
		}
		close(o.stop)
		<-o.pumped
		o.r.Close()
	})
}

// OutputTail implements executor.OutputTailer from the output file rather than the pump:
// when the action exits, the pump may not have read its last lines yet.
func (in *instance) OutputTail() []byte {
	f, err := os.Open(in.backend.outputFile(in.spec.Guid))
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	size := st.Size()
	buf := make([]byte, min(size, executor.OutputTailBytes))
	n, _ := f.ReadAt(buf, size-int64(len(buf)))
	return buf[:n]
}
