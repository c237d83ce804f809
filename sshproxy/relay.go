package sshproxy

import (
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/ssh"
)

// relay joins the user's connection and the daemon's: every channel and global request
// either side opens is opened on the other, until either connection ends, which ends both.
// It counts the channel data each way (toDaemon, fromDaemon) and says which side ended
// first: "client closed" or "instance closed".
func relay(user ssh.Conn, userChans <-chan ssh.NewChannel, userReqs <-chan *ssh.Request,
	daemon ssh.Conn, daemonChans <-chan ssh.NewChannel, daemonReqs <-chan *ssh.Request,
	toDaemon, fromDaemon *atomic.Int64) string {
	go relayGlobalRequests(userReqs, daemon)
	go relayGlobalRequests(daemonReqs, user)
	go relayChannels(userChans, daemon, toDaemon, fromDaemon)
	go relayChannels(daemonChans, user, fromDaemon, toDaemon)
	ended := make(chan string, 2)
	go func() { user.Wait(); ended <- "client closed" }()
	go func() { daemon.Wait(); ended <- "instance closed" }()
	first := <-ended
	user.Close()
	daemon.Close()
	<-ended
	return first
}

func relayGlobalRequests(reqs <-chan *ssh.Request, to ssh.Conn) {
	for r := range reqs {
		ok, payload, err := to.SendRequest(r.Type, r.WantReply, r.Payload)
		if r.WantReply {
			if err != nil {
				ok, payload = false, nil
			}
			r.Reply(ok, payload)
		}
	}
}

// relayChannels opens each new channel on the other side; the other side's refusal is
// passed on as it is. sent counts the data from the opening side to the other, received
// the data back.
func relayChannels(chans <-chan ssh.NewChannel, to ssh.Conn, sent, received *atomic.Int64) {
	for nch := range chans {
		go func() {
			other, otherReqs, err := to.OpenChannel(nch.ChannelType(), nch.ExtraData())
			if err != nil {
				if oe, ok := err.(*ssh.OpenChannelError); ok {
					nch.Reject(oe.Reason, oe.Message)
				} else {
					nch.Reject(ssh.ConnectionFailed, "bbs ssh-proxy: "+err.Error())
				}
				return
			}
			ch, reqs, err := nch.Accept()
			if err != nil {
				other.Close()
				return
			}
			joinChannels(ch, reqs, other, otherReqs, sent, received)
		}()
	}
}

// joinChannels copies data, extended data and requests both ways, counting the data a to b
// in aToBBytes and back in bToABytes. Each side's end of data becomes an EOF on the other;
// once a side closes (its requests end) and its data is through, the other side is closed
// too.
func joinChannels(a ssh.Channel, aReqs <-chan *ssh.Request, b ssh.Channel, bReqs <-chan *ssh.Request, aToBBytes, bToABytes *atomic.Int64) {
	aToB := pump(a, b, aToBBytes)
	bToA := pump(b, a, bToABytes)
	// Each side's requests still waiting for the other's reply: a side is closed only once
	// its own requests have their replies (an exec whose program exits at once must not see
	// its channel closed before its "yes").
	aAsking, bAsking := newInFlight(), newInFlight()
	go relayChannelRequests(aReqs, b, aToB, aAsking, bAsking)
	relayChannelRequests(bReqs, a, bToA, bAsking, aAsking)
}

// pump copies from's data and extended data to to, adding their bytes to n, then sends to
// an EOF.
func pump(from, to ssh.Channel, n *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(counting{to, n}, from) }()
	go func() { defer wg.Done(); io.Copy(counting{to.Stderr(), n}, from.Stderr()) }()
	go func() { wg.Wait(); to.CloseWrite() }()
	return &wg
}

// relayChannelRequests forwards a channel's requests (pty-req, exec, exit-status, ...) until
// the channel closes, and then closes the other side once the data in flight is through and
// the other side's own requests have had their replies (toAsking).
func relayChannelRequests(reqs <-chan *ssh.Request, to ssh.Channel, data *sync.WaitGroup, asking, toAsking *inFlight) {
	for r := range reqs {
		asking.add(1)
		ok, err := to.SendRequest(r.Type, r.WantReply, r.Payload)
		if r.WantReply {
			r.Reply(ok && err == nil, nil)
		}
		asking.add(-1)
	}
	data.Wait()
	toAsking.wait()
	to.Close()
}

// inFlight counts requests being relayed; wait returns when none is. Unlike a WaitGroup,
// it may count up while another goroutine waits.
type inFlight struct {
	mu   sync.Mutex
	idle *sync.Cond
	n    int
}

func newInFlight() *inFlight {
	f := &inFlight{}
	f.idle = sync.NewCond(&f.mu)
	return f
}

func (f *inFlight) add(d int) {
	f.mu.Lock()
	f.n += d
	if f.n == 0 {
		f.idle.Broadcast()
	}
	f.mu.Unlock()
}

func (f *inFlight) wait() {
	f.mu.Lock()
	for f.n > 0 {
		f.idle.Wait()
	}
	f.mu.Unlock()
}

// counting is a writer that adds what it writes to n as it goes, so that a session's
// audit line has the bytes relayed even while a copy is still ending.
type counting struct {
	w io.Writer
	n *atomic.Int64
}

func (c counting) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n.Add(int64(k))
	return k, err
}
