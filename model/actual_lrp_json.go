package model

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the instance's JSON to b: the bytes encoding/json would write for it
// (a test holds the two equal), without reflection, for lists of the whole fleet.
func (a *ActualLRP) AppendJSON(b []byte) []byte {
	b = append(b, `{"process_guid":`...)
	b = appendJSONString(b, a.ProcessGUID)
	if a.DefinitionID != "" {
		b = append(b, `,"definition_id":`...)
		b = appendJSONString(b, a.DefinitionID)
	}
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(a.Index), 10)
	b = append(b, `,"domain":`...)
	b = appendJSONString(b, a.Domain)
	b = appendOptionalString(b, `,"instance_guid":`, a.InstanceGUID)
	b = appendOptionalString(b, `,"cell_id":`, a.CellID)
	b = appendOptionalString(b, `,"address":`, a.Address)
	if len(a.Ports) > 0 {
		b = append(b, `,"ports":[`...)
		for i, p := range a.Ports {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"container_port":`...)
			b = strconv.AppendUint(b, uint64(p.ContainerPort), 10)
			b = append(b, `,"host_port":`...)
			b = strconv.AppendUint(b, uint64(p.HostPort), 10)
			if p.ContainerTLSProxyPort != 0 {
				b = append(b, `,"container_tls_proxy_port":`...)
				b = strconv.AppendUint(b, uint64(p.ContainerTLSProxyPort), 10)
			}
			if p.HostTLSProxyPort != 0 {
				b = append(b, `,"host_tls_proxy_port":`...)
				b = strconv.AppendUint(b, uint64(p.HostTLSProxyPort), 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendOptionalString(b, `,"instance_address":`, a.InstanceAddress)
	b = appendOptionalString(b, `,"preferred_address":`, a.PreferredAddress)
	b = append(b, `,"state":`...)
	b = appendJSONString(b, a.State)
	b = appendOptionalString(b, `,"placement_error":`, a.PlacementError)
	b = append(b, `,"since":`...)
	b = strconv.AppendInt(b, a.Since, 10)
	b = append(b, `,"crash_count":`...)
	b = strconv.AppendInt(b, int64(a.CrashCount), 10)
	b = appendOptionalString(b, `,"crash_reason":`, a.CrashReason)
	b = append(b, `,"presence":`...)
	b = appendJSONString(b, a.Presence)
	b = append(b, `,"modification_tag":{"epoch":`...)
	b = appendJSONString(b, a.ModificationTag.Epoch)
	b = append(b, `,"index":`...)
	b = strconv.AppendUint(b, uint64(a.ModificationTag.Index), 10)
	b = append(b, '}')
	b = appendOptionalString(b, `,"availability_zone":`, a.AvailabilityZone)
	if a.Retiring {
		b = append(b, `,"retiring":true`...)
	}
	if len(a.InternalRoutes) > 0 {
		b = append(b, `,"internal_routes":[`...)
		for i, h := range a.InternalRoutes {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, h)
		}
		b = append(b, ']')
	}
	if len(a.MetricTags) > 0 {
		b = append(b, `,"metric_tags":{`...)
		keys := make([]string, 0, len(a.MetricTags))
		for k := range a.MetricTags {
			keys = append(keys, k)
		}
		slices.Sort(keys) // encoding/json's order
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendJSONString(b, k), ':')
			b = appendJSONString(b, a.MetricTags[k])
		}
		b = append(b, '}')
	}
	if a.NotReady {
		b = append(b, `,"not_ready":true`...)
	}
	return append(b, '}')
}

func appendOptionalString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as encoding/json writes a string: HTML-safe (<, > and & as
// \u escapes), U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
