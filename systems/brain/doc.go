// Package brain builds privacy-safe context packets from a local knowledge
// graph (a room) and exchanges them with a remote reasoning service, the
// Brain, over MCP.
//
// The wire contract is seed 002, the Brain Context Packet v1.0: twelve jobs,
// each with an in shape (the packet) and an out shape (a BrainResponse).
// Its promise is kept here in three places:
//
//   - Build is the only way a packet is made. Every text leaves the room as
//     a projection: a sha256 hash under local_summary_only and
//     allow_filenames, a capped excerpt under allow_excerpts. Bodies are
//     never copied. Identifiers, types, statuses and tags are checked
//     against a vocabulary pattern when they enter the room, so nothing
//     that travels unhashed can hold a path, an address or prose.
//   - Wire.Send refuses a packet that does not validate against its job's
//     in schema, never strips it; it validates the Brain's reply against
//     the job's out schema and records every packet and reply on the
//     evidence ledger.
//   - Ingest turns suggestions into proposals only. Nothing the Brain said
//     becomes confirmed without a named user (Room.Confirm), and what a
//     user reviewed never changes: a later suggestion about it is a new
//     proposal beside it. On the console's page the reviewer is the
//     signed-in operator, never a typed name (Handler).
//
// # Room import form
//
// A room is loaded from JSON (see testdata/example_room.json):
//
//	{
//	  "room": {
//	    "stage": "budding",                   // room_stage; default "unknown"
//	    "jtbd": "text of the job to be done", // projected like every text
//	    "jtbd_tags": ["pricing", "smb"],      // for banked opportunity scores
//	    "operator": "JUST_TALK",              // default JUST_TALK
//	    "privacy_mode": "local_summary_only", // default local_summary_only
//	    "framework_chain": { ... }            // a FrameworkChainHint, optional
//	  },
//	  "nodes": [{
//	    "id": "claim-1",                      // [A-Za-z0-9_.:-], at most 128
//	    "type": "claim",                      // [A-Za-z][A-Za-z0-9_]*
//	    "properties": {"summary": "...", "body": "...", "tags": [...], "hsi": 72},
//	    "source_section": "market",
//	    "confidence": 0.7,                    // optional, 0..1
//	    "review_status": "confirmed",         // proposed|confirmed|validated|rejected
//	    "created_by": "user",
//	    "confirmed_by": "alice",
//	    "created_at": "2026-01-02T15:04:05Z", // RFC 3339; default now
//	    "updated_at": "2026-01-02T15:04:05Z"
//	  }],
//	  "edges": [{"source": "claim-1", "target": "ev-1", "type": "SUPPORTS", "properties": {}}],
//	  "memory_events": [{"id": "ev-0001", "event_type": "node_edited",
//	    "target_node_id": "claim-1", "created_at": "...", "payload": {}}]
//	}
//
// A node's summary is the first non-empty of the properties summary, claim,
// title and text. A decision node with review_status confirmed, a
// confirmed_by user and the property "grants_privacy_mode":
// "allow_excerpts" is what allows excerpts; the wire accepts only
// local_summary_only all the same.
package brain
