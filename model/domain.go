package model

// Domain is a consumer's grouping of DesiredLRPs. While a domain is fresh, the consumer vouches
// that its desired state is complete, so convergence may stop extra instances (seed 002).
type Domain struct {
	Name string `json:"domain"`
	// TTL is in seconds; 0 means the domain never expires.
	TTL int64 `json:"ttl"`
}

// MaxDomainTTL bounds a TTL to a century, far beyond any sensible freshness window, so that
// the expiry time cannot overflow.
const MaxDomainTTL = 100 * 365 * 24 * 3600

// Validate checks the domain name and TTL.
func (d *Domain) Validate() error {
	if d.Name == "" {
		return invalid("domain is required")
	}
	if len(d.Name) > MaxGUIDLength {
		return invalid("domain is longer than %d characters", MaxGUIDLength)
	}
	if d.TTL < 0 || d.TTL > MaxDomainTTL {
		return invalid("ttl must be between 0 and %d seconds", MaxDomainTTL)
	}
	return nil
}
