package event

import (
	"crypto/sha256"
	"encoding/binary"
)

// fingerprintDomain versions the encoding: fingerprints are stored and
// compared across releases, so a new encoding needs a new domain string.
const fingerprintDomain = "revenue-stream/hourly event fingerprint v1\x00"

// Fingerprint returns an event's business-content fingerprint (SPEC §4): the
// first 8 bytes, big-endian, of SHA-256 over the domain and the canonical,
// length-prefixed event time, user id, amount and dims (not event_id).
func Fingerprint(eventTimeMs int64, userID string, amountMicros int64, dims string) uint64 {
	var buf [192]byte // fits a typical event without a heap allocation
	b := append(buf[:0], fingerprintDomain...)
	b = binary.BigEndian.AppendUint64(b, uint64(eventTimeMs))
	b = binary.BigEndian.AppendUint64(b, uint64(len(userID)))
	b = append(b, userID...)
	b = binary.BigEndian.AppendUint64(b, uint64(amountMicros))
	b = binary.BigEndian.AppendUint64(b, uint64(len(dims)))
	b = append(b, dims...)
	sum := sha256.Sum256(b)
	return binary.BigEndian.Uint64(sum[:8])
}
