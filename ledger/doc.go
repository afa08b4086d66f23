// Package ledger holds the pure logic of the evidence chain: RFC 8785
// canonical JSON, the link hash, signed checkpoints, verification and the
// JSONL export format. It does no I/O of its own; stores and the command
// line call it.
//
// # The chain
//
// Every entry is linked to the one before it:
//
//	hash = SHA-256(prev_hash_bytes ‖ JCS(entry without "hash"))
//
// where the first entry's prev is 32 zero bytes (64 zeros in hex) and JCS
// is the RFC 8785 canonical form. Hashes are written as lowercase hex. The
// body is bound twice over: body_sha256 is the SHA-256 of its exact bytes,
// and the canonical entry holds the canonical form of the body, so the hash
// covers both what was received and what it means.
//
// # Canonical JSON
//
// Canonicalize implements RFC 8785 and refuses what it cannot hash
// faithfully. It reads with the strict reader every front door reads
// with (internal/strictjson), so it refuses what they refuse: invalid
// JSON or UTF-8, lone surrogates, duplicate keys, nesting deeper than
// 512, data after the document, and numbers that a double would not hold
// as they are written. The number rules are stricter than RFC 8785:
//
//   - an integer literal lies within ±2^53: 9007199254740993 names an
//     exact integer to most parsers but would hash as 9007199254740992,
//     so one approval could authorise two different actions;
//   - a literal with a fraction or an exponent is a double by its own
//     spelling and is accepted within the range of a double, except where
//     its value is an integer beyond ±2^53 below 10^21 (1e20): its
//     canonical form would be such an integer literal;
//   - an exponent has at most four significant digits.
//
// So no two accepted integer literals hash alike, and every canonical
// form canonicalizes to itself (1E30 becomes 1e+30, 2.50 becomes 2.5).
//
// Accepted, for example: 9007199254740992, -9007199254740992, -0, 2.5, 1E30, 1e21, 9007199254740992.0, 0E00009999.
//
// Refused, for example: 9007199254740993, 100000000000000000000, 1e20, 9007199254740994.0, 1e400, 1e10000.
//
// # Bodies and JSONL
//
// A body is kept exactly as received, so body_sha256 can be checked by
// anyone holding the bytes: pretty-printed JSON with newlines included.
// Refusing such bodies when sealing would mean refusing what agents actually
// send, or recording something other than what they sent. Instead the
// JSONL export carries a body in one of two ways. When the bytes are a
// single-line canonicalizable document with no whitespace around it, the
// common case, the line holds them as they are under "body", and the
// export reads as plain JSON. Otherwise the line holds them as a JSON
// string under "body_raw", whose decoded bytes are the body. A Decoder
// returns the exact bytes either way, and a line never holds both.
//
// # Checkpoints
//
// A checkpoint states the ledger's id, size and head hash, signed with
// ed25519 over the bytes
//
//	"custody-checkpoint/v2\n" <ledger id> "\n" <size> "\n" <head> "\n" <at> "\n"
//
// (see LedgerCheckpointMessage). The ledger id is random, made with the
// ledger, so a checkpoint of one ledger never verifies as one of another.
// Checkpoints written before ledgers had ids sign
// "custody-checkpoint/v1\n" <size> "\n" <head> "\n" <at> "\n" and still
// verify. A ledger whose key was replaced records it with a
// KeyRotatedKind entry; each checkpoint verifies with the key in force at
// its size (see Verifier). Keys are exchanged as PEM: "PUBLIC KEY" (PKIX)
// and "PRIVATE KEY" (PKCS #8). A Verifier checks every entry in order and
// every checkpoint against the entries: rewriting any entry breaks the
// chain at that entry, rewriting the whole chain breaks every checkpoint
// signed before, and cutting off the tail leaves a checkpoint whose size
// exceeds the entries that remain.
package ledger
