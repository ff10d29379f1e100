// Package event turns one raw input line into a validated [model.Event] or a
// [model.Quarantined] record (SPEC §3), with exact money and a canonical
// fingerprint (SPEC §4). It is plain Go: the transforms, the reconcile pipeline
// and the tests all call [Parse], so one set of rules decides what is valid.
//
// [Parse] reports the first failure, in this order: oversized (before any JSON
// is read), malformed_json, not_an_object, missing_field (all such fields
// named), bad_event_id, bad_user_id, bad_amount, bad_event_time,
// future_event_time (exactly MaxFuture ahead is accepted), too_old (only with
// MaxAge > 0 and a partition watermark; exactly at the bound is accepted).
//
// Where the SPEC leaves room:
//   - JSON is RFC 8259; a duplicate key at any depth, invalid UTF-8, a lone
//     surrogate escape or nesting deeper than 128 is malformed_json, since the
//     canonical forms must be unambiguous; a leading BOM is ignored (§8.1).
//   - null counts as missing. Ids must be strings, not blank and free of control
//     characters (corruption that would become a distinct dedup key); they are
//     never trimmed, and event_id's 256-byte limit counts unescaped bytes.
//   - An amount is a JSON number, or a string holding exactly a JSON number
//     literal, computed exactly into int64 micros (never float64): at most 6
//     fractional digits of value, |amount| < 1e12; zero and refunds are valid.
//   - An event time is RFC 3339 (T/t/space, Z/z/offset, any fraction; :60 reads
//     as :59.999) or epoch ms (number or numeric string), floored to its
//     millisecond towards the past, within [MinEventTime, MaxEventTime].
//   - [CanonicalDims] renders dimensions as one JSON object close to RFC 8785:
//     keys sorted by bytes, null for missing, minimal string escapes, numbers by
//     exact decimal value (1, 1.0 and 10e-1 are one value; long ids keep digits).
//   - [Fingerprint] hashes (event_time, user_id, amount, canonical dims), not
//     event_id, so it is comparable only between runs with the same --dimensions.
//
// Parse does not copy the line: payloads alias Record.Line, except an oversized
// record's, a copy of at most [MaxPayloadPrefix] bytes so it pins no large line.
package event
