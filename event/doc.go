// Package event turns one raw input line into a validated [model.Event] or a
// [model.Quarantined] record (SPEC §3), with exact money and a canonical
// business-content fingerprint (SPEC §4). It is plain Go: the Beam transforms,
// the reconcile pipeline and the tests all call [Parse], so one set of rules
// decides what is valid everywhere.
//
// # Order of checks
//
// [Parse] checks, in this order, and reports the first failure:
//
//  1. oversized: Record.Oversized, or a line longer than Config.MaxLine. The
//     JSON is not touched, so a huge line costs nothing to reject.
//  2. malformed_json: the whole line must be one well-formed JSON value.
//  3. not_an_object: well-formed JSON that is not an object.
//  4. missing_field: a required field is absent or null (all such fields are
//     named in the detail).
//  5. bad_event_id, bad_user_id, bad_amount, bad_event_time, in the order of
//     the SPEC's reason list.
//  6. future_event_time: event_time > ReadAt + MaxFuture (exactly MaxFuture
//     ahead is accepted).
//  7. too_old: only when MaxAge > 0 and the record carries a partition
//     watermark: event_time < WatermarkBefore - MaxAge (exactly at the bound
//     is accepted).
//
// # Decisions where the SPEC leaves room
//
// JSON strictness. The line must be RFC 8259 JSON. In addition, and because
// the canonical forms below must be unambiguous:
//   - a duplicate key in any object, at any depth, is malformed_json: which
//     copy counts is not defined by JSON, and two parsers would disagree;
//   - invalid UTF-8 and lone UTF-16 surrogate escapes (\ud800) are
//     malformed_json, since they cannot be re-encoded canonically;
//   - nesting deeper than 128 is malformed_json (bounds the stack);
//   - a leading UTF-8 byte order mark is ignored (RFC 8259 §8.1 allows it; it
//     appears on the first line of files written by some Windows tools).
//
// Required fields. An explicit null counts as missing (missing_field), as it
// does for dimensions. A wrong JSON type is the field's bad_* reason.
// event_id and user_id must be strings; beyond the SPEC's "non-empty" they
// must not be blank (only whitespace) and must not contain control characters
// (U+0000–U+001F, U+007F): such an id is almost certainly corruption and would
// silently become a distinct dedup key. IDs are otherwise taken verbatim
// (after JSON unescaping), never trimmed. The 256-byte limit on event_id
// counts the unescaped UTF-8 bytes.
//
// Amounts. A JSON number, or a JSON string whose entire content is a JSON
// number literal: one grammar for both, so a leading '+', leading zeros
// ("007"), ".5", "5.", hex, NaN, Infinity and any whitespace inside the string
// are bad_amount. Exponents are allowed (1e2, 1.5E-3). The value is computed
// exactly from the digits into int64 micros, never through float64. At most 6
// fractional digits of value: "1.2300000" is fine, "1.0000001" and 1e-7 are
// not. |amount| must be < 1e12. Negative amounts (refunds) and zero are valid.
//
// Event times. Either an RFC 3339 string or epoch milliseconds.
//   - RFC 3339: "T", "t" or a space between date and time (RFC 3339 §5.6
//     note), "Z", "z" or a ±hh:mm offset (normalised to UTC, "-00:00" is
//     UTC); any number of fractional-second digits. A leap second (:60) is
//     read as hh:mm:59.999 so the event stays in its minute and hour.
//   - Epoch milliseconds: a JSON number, or a string whose whole content is a
//     JSON number literal (the proto3 JSON mapping writes int64 as a string).
//     A fraction or exponent is accepted (1.7622513e12).
//   - "Finer digits are truncated" means the instant is floored to its
//     millisecond, i.e. towards the past, also before 1970:
//     1969-12-31T23:59:59.9995Z and -0.5 are both -1 ms. This is what
//     dropping digits of the calendar form does, and it keeps every instant in
//     the window that contains it.
//   - The result must lie in [0000-01-01T00:00:00Z, 9999-12-31T23:59:59.999Z]
//     ([MinEventTime], [MaxEventTime]) so that it renders as RFC 3339.
//
// Dimensions. [CanonicalDims] renders the configured fields as one JSON
// object with keys sorted by their UTF-8 bytes, no whitespace, and null for a
// missing (or null) field. Values are re-encoded canonically, close to
// RFC 8785 (JCS):
//   - strings: only '"', '\\' and control characters are escaped
//     (\b \t \n \f \r, else \u00xx); everything else is raw UTF-8, so
//     "\u00e9" and "é" are the same dimension value;
//   - numbers: by exact decimal value, in the ECMAScript Number-to-String
//     layout JCS uses, but computed from the digits and never through float64,
//     so 1, 1.0, 1e0 and 10e-1 all become 1, 1e21 becomes 1e+21, and a 25-digit
//     store id keeps every digit (JCS would round it). A number whose exponent
//     does not fit in 40 bits keeps its original text;
//   - objects and arrays are allowed and re-encoded recursively (object keys
//     sorted, array order kept); true, false and null are kept.
//
// Fingerprint. See [Fingerprint]: the first 8 bytes (big-endian) of SHA-256
// over a versioned, length-prefixed encoding of (event_time ms, user_id,
// amount micros, canonical dims). event_id is not part of it. A fingerprint
// depends on the configured dimensions, so fingerprints are only comparable
// between runs with the same --dimensions (run_config enforces that).
//
// # Aliasing
//
// Parse does not copy the line: Event.Payload and Quarantined.Payload alias
// Record.Line, so the caller must not reuse the line's buffer. The one
// exception is an oversized record, whose payload is a copy of at most
// [MaxPayloadPrefix] bytes, so a quarantined 1 MiB line does not stay pinned
// in memory by its audit row.
package event
