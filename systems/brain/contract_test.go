package brain

import "testing"

// TestContractNamesJobs checks that the contract names the in and out
// shape of every job at the refs the wire validates against.
func TestContractNamesJobs(t *testing.T) {
	reg := registry(t)
	if n := len(reg.Named()); n != 2*len(jobs) {
		t.Errorf("contract names %d schemas, want %d", n, 2*len(jobs))
	}
	for _, job := range Jobs() {
		for name, want := range map[string]string{"brain:" + job + "/in": InRef(job), "brain:" + job + "/out": outRef(job)} {
			got, err := reg.Resolve(name)
			if err != nil || got != want {
				t.Errorf("Resolve(%s) = %q, %v; want %q", name, got, err, want)
			}
		}
	}
}
