package mesh

import "github.com/custody-dev/custody"

// sign signs raw for subject with the wire's identity, which must hold
// the role that sends kind.
func (w *Wire) sign(kind Kind, subject string, raw []byte) (Msg, error) {
	id := w.Identity
	if id == nil {
		return Msg{}, custody.Errorf(custody.EUNAVAILABLE, "no mesh key to sign the %s with", kind)
	}
	if want := roleOf(kind); id.Role != want {
		return Msg{}, custody.Errorf(custody.EINVALID, "%s %q may not send a %s: only a %s may", id.Role, id.Name, kind, want)
	}
	return id.sign(subject, raw)
}

// verify checks that m carries a valid signature of its exact bytes by a
// member of the wire's roster whose role may send kind, and returns the
// member. The error is EUNAUTHORIZED.
func (w *Wire) verify(kind Kind, m Msg) (Member, error) {
	return verifySignature(w.Roster, kind, m)
}

// wireIdentity returns w's identity; nil for a nil wire.
func wireIdentity(w *Wire) *Identity {
	if w == nil {
		return nil
	}
	return w.Identity
}
