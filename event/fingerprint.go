package event

import (
	"crypto/sha256"
	"encoding/binary"
)

// fingerprintDomain versions the encoding: fingerprints are stored and
// compared across releases, so a new encoding needs a new domain string.
const fingerprintDomain = "revenue-stream/hourly event fingerprint v1\x00"

// Fingerprint returns the canonical business-content fingerprint of an event
// (SPEC §4): the first 8 bytes, big-endian, of SHA-256 over
//
//	domain || i64be(eventTimeMs) || u64be(len(userID)) || userID ||
//	i64be(amountMicros) || u64be(len(dims)) || dims
//
// The inputs are canonical, so "100.0", 100 and 1e2 agree; length prefixes
// keep field boundaries unambiguous. event_id is not included: dedup is keyed
// by it, and the fingerprint says whether two copies agree.
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
