//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// serverRunner returns how to run the server's programs: as the postgres
// user when this process is root, which they refuse to run as, else as
// this process's user. reason says why they cannot be run.
func serverRunner() (r runner, reason string) {
	if os.Geteuid() != 0 {
		return runner{user: "this process's user", command: exec.Command, own: func(string) error { return nil }}, ""
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return runner{}, fmt.Sprintf("running as root with no postgres user to run a PostgreSQL cluster as: %v", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return runner{}, fmt.Sprintf("the postgres user's ids %s:%s are not numbers", u.Uid, u.Gid)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return runner{
		user: "the postgres user",
		command: func(name string, args ...string) *exec.Cmd {
			cmd := exec.Command(name, args...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			return cmd
		},
		own: func(dir string) error { return os.Chown(dir, int(uid), int(gid)) },
	}, ""
}
