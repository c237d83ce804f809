package api

import "github.com/updatable-lrps/bbs/lrps"

// Stopper asks cells to stop CLAIMED or RUNNING instances; the cells then remove the records.
type Stopper = lrps.Stopper
