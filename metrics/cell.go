package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/model"
)

// cellSeries are a cell's capacity series, Diego's rep's names in our form: each reads the
// total or what is left of it.
var cellSeries = []struct {
	name, diego, help string
	value             func(total, left model.CellCapacity) float64
}{
	{"bbs_cell_containers", "ContainerCount", "Containers the cell holds.",
		func(t, l model.CellCapacity) float64 { return float64(t.Containers - l.Containers) }},
	{"bbs_cell_capacity_total_memory_bytes", "CapacityTotalMemory", "Memory the cell offers to containers.",
		func(t, _ model.CellCapacity) float64 { return mib(t.MemoryMB) }},
	{"bbs_cell_capacity_remaining_memory_bytes", "CapacityRemainingMemory", "Memory the cell has left for containers.",
		func(_, l model.CellCapacity) float64 { return mib(l.MemoryMB) }},
	{"bbs_cell_capacity_total_disk_bytes", "CapacityTotalDisk", "Disk the cell offers to containers.",
		func(t, _ model.CellCapacity) float64 { return mib(t.DiskMB) }},
	{"bbs_cell_capacity_remaining_disk_bytes", "CapacityRemainingDisk", "Disk the cell has left for containers.",
		func(_, l model.CellCapacity) float64 { return mib(l.DiskMB) }},
	{"bbs_cell_capacity_total_containers", "CapacityTotalContainers", "Containers the cell can hold.",
		func(t, _ model.CellCapacity) float64 { return float64(t.Containers) }},
	{"bbs_cell_capacity_remaining_containers", "CapacityRemainingContainers", "Containers the cell can still take.",
		func(_, l model.CellCapacity) float64 { return float64(l.Containers) }},
}

func mib(mb int32) float64 { return float64(mb) * 1024 * 1024 }

// cellCollector reads the cell's capacity once per scrape, for all its series: the cell's
// own bookkeeping pays nothing between scrapes.
type cellCollector struct {
	total model.CellCapacity
	left  func() model.CellCapacity
	descs []*prometheus.Desc
}

// RegisterCell registers a cell's capacity series on reg: total is what it offers, left
// reads what its containers leave of it.
func RegisterCell(reg prometheus.Registerer, total model.CellCapacity, left func() model.CellCapacity) {
	c := &cellCollector{total: total, left: left}
	for _, s := range cellSeries {
		c.descs = append(c.descs, prometheus.NewDesc(s.name, help(s.help, s.diego), nil, nil))
	}
	reg.MustRegister(c)
}

func (c *cellCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *cellCollector) Collect(ch chan<- prometheus.Metric) {
	left := c.left()
	for i, s := range cellSeries {
		ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.GaugeValue, s.value(c.total, left))
	}
}
