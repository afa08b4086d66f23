package mesh

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/nats-io/nkeys"

	"github.com/custody-dev/custody"
)

// Every mesh message is signed by its sender with an ed25519 key in the
// NATS nkeys encoding (a user key: the public key starts with "U", the
// seed with "SU"). The signature is detached: it covers exactly the
// message bytes, which are the bytes the contract validates and the
// ledger records as the entry's body, and travels beside them (NATS
// headers SignerHeader and SignatureHeader). The ledger entry of a
// message sent or received keeps the signer and the signature in its
// refs (RefSigner, RefSignature), so that anyone holding the ledger can
// check ed25519.Verify(signer, body, signature) on the body as recorded.

// Headers that carry the signature of a message on NATS.
const (
	SignerHeader    = "Custody-Mesh-Signer"
	SignatureHeader = "Custody-Mesh-Signature"
)

// Ledger refs naming the signer of a message and its signature.
const (
	RefSigner    = "signer"
	RefSignature = "signature"
)

// Role is what a roster member may send.
type Role string

// The roles of the mesh.
const (
	// RoleNode sends advisories, under its own node id only.
	RoleNode Role = "node"
	// RoleAggregator sends aggregations.
	RoleAggregator Role = "aggregator"
	// RoleDesk sends the broadcasts an operator approved.
	RoleDesk Role = "desk"
)

// Roles lists the roles.
func Roles() []Role { return []Role{RoleNode, RoleAggregator, RoleDesk} }

// roleOf is the role that may send kind.
func roleOf(kind Kind) Role {
	switch kind {
	case kindAdvisory:
		return RoleNode
	case kindAggregation:
		return RoleAggregator
	}
	return RoleDesk
}

// Member is one admitted participant: its name (a node's id), role and
// public nkey.
type Member struct {
	Name      string `json:"name"`
	Role      Role   `json:"role"`
	PublicKey string `json:"public_key"`
}

// check refuses a member with an unknown role, a node name that is not a
// forward node id, or a public key that is not an nkeys user key.
func (m Member) check() error {
	if !slices.Contains(Roles(), m.Role) {
		return fmt.Errorf("member %q: role %q is not one of node, aggregator, desk", m.Name, m.Role)
	}
	if m.Role == RoleNode && !validNodeID(m.Name) {
		return fmt.Errorf("node %q: name must be a forward node id (forward-...)", m.Name)
	}
	if m.Name == "" || len(m.Name) > 64 {
		return fmt.Errorf("member %q: name must be 1-64 characters", m.Name)
	}
	if !nkeys.IsValidPublicUserKey(m.PublicKey) {
		return fmt.Errorf("member %q: public key %q is not an nkeys user public key (U...)", m.Name, m.PublicKey)
	}
	return nil
}

// Roster is the set of admitted members, by public key. It is safe for
// concurrent use.
type Roster struct {
	mu    sync.RWMutex
	byKey map[string]Member
}

// RosterFile is the JSON form of a roster file.
type RosterFile struct {
	Members []Member `json:"members"`
}

// NewRoster returns a roster of members; an error names the first member
// that is malformed, or a key or node name admitted twice.
func NewRoster(members ...Member) (*Roster, error) {
	r := &Roster{byKey: make(map[string]Member, len(members))}
	for _, m := range members {
		if err := r.Admit(m); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Admit adds m to the roster.
func (r *Roster) Admit(m Member) error {
	if err := m.check(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byKey[m.PublicKey]; dup {
		return fmt.Errorf("member %q: public key %s is already admitted", m.Name, m.PublicKey)
	}
	for _, o := range r.byKey {
		if o.Role == m.Role && o.Name == m.Name {
			return fmt.Errorf("%s %q is already admitted", m.Role, m.Name)
		}
	}
	r.byKey[m.PublicKey] = m
	return nil
}

// Member returns the member holding public key pub.
func (r *Roster) Member(pub string) (Member, bool) {
	if r == nil {
		return Member{}, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	m, ok := r.byKey[pub]
	return m, ok
}

// Node reports whether a node named id is admitted.
func (r *Roster) Node(id string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, m := range r.byKey {
		if m.Role == RoleNode && m.Name == id {
			return true
		}
	}
	return false
}

// Members returns the members, by role and name.
func (r *Roster) Members() []Member {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Member, 0, len(r.byKey))
	for _, m := range r.byKey {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Member) int {
		if c := cmpString(string(a.Role), string(b.Role)); c != 0 {
			return c
		}
		return cmpString(a.Name, b.Name)
	})
	return out
}

// ReadRoster parses a roster file's JSON, refusing unknown fields.
func ReadRoster(raw []byte) (*Roster, error) {
	var f RosterFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("roster is not {\"members\": [{\"name\",\"role\",\"public_key\"}, ...]}: %w", err)
	}
	return NewRoster(f.Members...)
}

// LoadRoster reads the roster file at path. The error is EINVALID and
// names the file.
func LoadRoster(path string) (*Roster, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, invalid("read mesh roster", err)
	}
	r, err := ReadRoster(raw)
	if err != nil {
		return nil, invalid("mesh roster "+path, err)
	}
	return r, nil
}

// invalid is err as an EINVALID error saying what failed.
func invalid(what string, err error) error {
	return &custody.Error{Kind: custody.EINVALID, Message: what + ": " + err.Error(), Err: err}
}

// Identity is one participant's signing key.
type Identity struct {
	Member
	kp nkeys.KeyPair
}

// NewIdentity returns a fresh identity for name in role.
func NewIdentity(name string, role Role) (*Identity, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("create mesh key: %w", err)
	}
	return identityOf(name, role, kp)
}

// ParseIdentity returns the identity of an nkeys user seed (SU...).
func ParseIdentity(name string, role Role, seed []byte) (*Identity, error) {
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		return nil, fmt.Errorf("mesh key of %s is not an nkeys seed: %w", name, err)
	}
	return identityOf(name, role, kp)
}

// LoadIdentity reads the seed file at path (as written by WriteSeed).
// The error is EINVALID and names the file.
func LoadIdentity(name string, role Role, path string) (*Identity, error) {
	seed, err := os.ReadFile(path)
	if err != nil {
		return nil, invalid("read mesh key", err)
	}
	id, err := ParseIdentity(name, role, seed)
	if err != nil {
		return nil, invalid("mesh key "+path, err)
	}
	return id, nil
}

func identityOf(name string, role Role, kp nkeys.KeyPair) (*Identity, error) {
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("mesh key of %s: %w", name, err)
	}
	m := Member{Name: name, Role: role, PublicKey: pub}
	if err := m.check(); err != nil {
		return nil, err
	}
	return &Identity{Member: m, kp: kp}, nil
}

// WriteSeed writes the identity's seed to path, readable by its owner
// only; it refuses to replace a file (EINVALID).
func (id *Identity) WriteSeed(path string) error {
	seed, err := id.kp.Seed()
	if err != nil {
		return fmt.Errorf("mesh key of %s: %w", id.Name, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return invalid("write mesh key", err)
	}
	if _, err := f.Write(append(seed, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write mesh key %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write mesh key %s: %w", path, err)
	}
	return nil
}

// sign returns the message of data on subject, signed.
func (id *Identity) sign(subject string, data []byte) (Msg, error) {
	sig, err := id.kp.Sign(data)
	if err != nil {
		return Msg{}, fmt.Errorf("sign as %s: %w", id.Name, err)
	}
	return Msg{Subject: subject, Data: data, Signer: id.PublicKey, Signature: base64.RawURLEncoding.EncodeToString(sig)}, nil
}

// Sign returns the message of data on subject signed by id, for a
// participant that publishes without a Wire.
func (id *Identity) Sign(subject string, data []byte) (Msg, error) { return id.sign(subject, data) }

// verifySignature checks that m is signed by a member of roster allowed
// to send kind, and returns that member. The error is EUNAUTHORIZED.
func verifySignature(roster *Roster, kind Kind, m Msg) (Member, error) {
	if m.Signer == "" || m.Signature == "" {
		return Member{}, custody.Errorf(custody.EUNAUTHORIZED, "%s is not signed", kind)
	}
	member, ok := roster.Member(m.Signer)
	if !ok {
		return Member{}, custody.Errorf(custody.EUNAUTHORIZED, "%s is signed by %s, which is not on the roster", kind, m.Signer)
	}
	if want := roleOf(kind); member.Role != want {
		return member, custody.Errorf(custody.EUNAUTHORIZED, "%s is signed by %s %q: only a %s may send one", kind, member.Role, member.Name, want)
	}
	sig, err := base64.RawURLEncoding.DecodeString(m.Signature)
	if err != nil {
		return member, custody.Errorf(custody.EUNAUTHORIZED, "%s signature of %s is not base64url", kind, member.Name)
	}
	kp, err := nkeys.FromPublicKey(m.Signer)
	if err != nil {
		return member, custody.Errorf(custody.EUNAUTHORIZED, "%s signer %s is not a public key", kind, m.Signer)
	}
	if err := kp.Verify(m.Data, sig); err != nil {
		return member, custody.Errorf(custody.EUNAUTHORIZED, "%s signature of %s %q does not match the message", kind, member.Role, member.Name)
	}
	return member, nil
}

// signedRefs returns refs with m's signer and signature added.
func signedRefs(refs map[string]string, m Msg) map[string]string {
	out := make(map[string]string, len(refs)+2)
	for k, v := range refs {
		out[k] = v
	}
	if m.Signer != "" {
		out[RefSigner] = m.Signer
	}
	if m.Signature != "" {
		out[RefSignature] = m.Signature
	}
	return out
}
