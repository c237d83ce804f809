package events

import "github.com/updatable-lrps/bbs/model"

// Feed is what an API's event stream reads: the events committed from now on, until the
// returned function ends the subscription. Both APIs serve their streams from one Feed (a
// *Hub, whose Subscribe documents when the channel closes), so that a change is seen alike
// through either; tests stand in a feed of their own.
type Feed interface {
	Subscribe() (<-chan model.Event, func())
}

var _ Feed = (*Hub)(nil)
