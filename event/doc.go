// Package event turns one raw input line into a validated [model.Event] or a
// [model.Quarantined] record (SPEC §3), with exact money and a canonical
// fingerprint (SPEC §4). The transforms, reconcile and the tests all call
// [Parse], so one set of rules decides what is valid.
//
// [Parse] reports the first failure in SPEC order (oversized before any JSON
// is read; exactly at a bound is accepted). Where the SPEC leaves room:
//   - a duplicate key, invalid UTF-8, a lone surrogate or nesting deeper than
//     128 is malformed_json; a leading BOM is ignored (§8.1); null is missing;
//   - ids are strings, not blank, without control characters, never trimmed;
//   - amounts are exact int64 micros from a number or numeric string;
//   - event times are RFC 3339 (T/t/space, Z/z, :60 reads as :59.999) or epoch
//     ms, floored to the millisecond, within [MinEventTime, MaxEventTime];
//   - dims are one JSON object close to RFC 8785, numbers by exact value;
//   - [Fingerprint] omits event_id and depends on --dimensions.
//
// Payloads alias Record.Line, except an oversized record's bounded copy.
package event
