package process

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// output carries an instance's stdout and stderr to the executor's log, one prefixed line at a
// time. All processes of the instance write to one pipe: a real file descriptor, so that
// os/exec does not wait for a daemonized child to close its copy before Wait returns.
type output struct {
	dst    io.Writer
	prefix string
	r, w   *os.File
	pumped chan struct{}
	mu     sync.Mutex // serialises lines we write ourselves with the pump's
	once   sync.Once
}

func newOutput(dst io.Writer, prefix string) (*output, error) {
	if dst == nil {
		dst = io.Discard
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create output pipe: %w", err)
	}
	o := &output{dst: dst, prefix: prefix, r: r, w: w, pumped: make(chan struct{})}
	go o.pump()
	return o, nil
}

func (o *output) pump() {
	defer close(o.pumped)
	br := bufio.NewReaderSize(o.r, 64*1024)
	for {
		// A line longer than the buffer arrives in pieces, each printed as a line.
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			o.write(chunk)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// line writes a message of our own (emit_progress, notes) among the processes' output.
func (o *output) line(format string, args ...any) {
	o.write([]byte(fmt.Sprintf(format, args...)))
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

// close ends the pump once the processes have exited. A process that escaped its group may
// still hold the pipe open, so the pump gets a moment to drain and is then cut off.
func (o *output) close() {
	o.once.Do(func() {
		o.w.Close()
		select {
		case <-o.pumped:
		case <-time.After(time.Second):
		}
		o.r.Close()
	})
}
