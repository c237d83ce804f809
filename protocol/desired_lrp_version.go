package protocol

import (
	"strings"

	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// What BBS does to a DesiredLRP on its way out (BBS-PROTOCOL.md §2.3): every read fills
// metrics_guid and the source_id tag from each other, and the .r2 routes serve the V2 model,
// which has no image layers.

// populateMetricsGUID is BBS's PopulateMetricsGuid: a DesiredLRP with a source_id tag and no
// metrics guid gets the tag's static value as its metrics guid; one with a metrics guid and
// no source_id tag gets a tag of it.
func populateMetricsGUID(d *pb.DesiredLRP) {
	source, ok := d.GetMetricTags()["source_id"]
	switch {
	case ok && d.GetMetricsGuid() == "":
		d.MetricsGuid = source.GetStatic()
	case !ok && d.GetMetricsGuid() != "":
		if d.MetricTags == nil {
			d.MetricTags = map[string]*pb.MetricTagValue{}
		}
		d.MetricTags["source_id"] = &pb.MetricTagValue{Static: d.GetMetricsGuid()}
	}
}

// downgradeToV2 is BBS's V3 to V2 downgrade of a DesiredLRP (layersToV2): the image layers
// go, into its cached dependencies and before its setup. d is left as it is.
func downgradeToV2(d *pb.DesiredLRP) *pb.DesiredLRP {
	if len(d.GetImageLayers()) == 0 {
		return d
	}
	v2 := proto.CloneOf(d)
	v2.CachedDependencies, v2.Setup = layersToV2(v2.GetImageLayers(), v2.GetLegacyDownloadUser(), v2.GetCachedDependencies(), v2.GetSetup())
	v2.ImageLayers = nil
	return v2
}

// layersToV2 is what BBS's V3 to V2 downgrade makes of image layers, for DesiredLRPs and
// Tasks alike: SHARED layers become cached dependencies, ahead of those given (cached);
// EXCLUSIVE ones download actions as user, run in parallel before first (a DesiredLRP's setup,
// a Task's action). Neither cached nor first is changed.
func layersToV2(layers []*pb.ImageLayer, user string, cached []*pb.CachedDependency, first *pb.Action) ([]*pb.CachedDependency, *pb.Action) {
	var shared []*pb.CachedDependency
	var downloads []*pb.Action
	for _, l := range layers {
		algorithm := strings.ToLower(l.GetDigestAlgorithm().String())
		switch l.GetLayerType() {
		case pb.ImageLayer_SHARED:
			c := &pb.CachedDependency{Name: l.GetName(), From: l.GetUrl(), To: l.GetDestinationPath(), ChecksumValue: l.GetDigestValue()}
			if l.GetDigestAlgorithm() != pb.ImageLayer_DigestAlgorithmInvalid {
				c.ChecksumAlgorithm = algorithm
			}
			c.CacheKey = l.GetUrl()
			if l.GetDigestValue() != "" {
				c.CacheKey = c.ChecksumAlgorithm + ":" + l.GetDigestValue()
			}
			shared = append(shared, c)
		case pb.ImageLayer_EXCLUSIVE:
			downloads = append(downloads, &pb.Action{DownloadAction: &pb.DownloadAction{
				Artifact:          l.GetName(),
				From:              l.GetUrl(),
				To:                l.GetDestinationPath(),
				CacheKey:          algorithm + ":" + l.GetDigestValue(),
				User:              user,
				ChecksumAlgorithm: algorithm,
				ChecksumValue:     l.GetDigestValue(),
			}})
		}
	}
	outCached := append(shared, cached...)
	if len(downloads) == 0 {
		return outCached, first
	}
	parallel := &pb.Action{ParallelAction: &pb.ParallelAction{Actions: downloads}}
	if first == nil {
		return outCached, parallel
	}
	return outCached, &pb.Action{SerialAction: &pb.SerialAction{Actions: []*pb.Action{parallel, first}}}
}
