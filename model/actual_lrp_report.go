package model

import "encoding/json"

// InternalRouter is the routes key of the internal router (container-to-container service
// discovery): its value is a list of {"hostname": ...}, as Cloud Controller writes it.
const InternalRouter = "internal-router"

// InternalRouteHostnames reads the hostnames of an "internal-router" route value, what a
// Diego cell reports as the instance's internal routes. A value of another shape has none:
// routes are opaque to the BBS, and a malformed one must not fail a list.
func InternalRouteHostnames(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var routes []struct {
		Hostname string `json:"hostname"`
	}
	if json.Unmarshal(raw, &routes) != nil {
		return nil
	}
	out := make([]string, 0, len(routes))
	for _, r := range routes {
		if r.Hostname != "" {
			out = append(out, r.Hostname)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
