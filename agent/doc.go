// Package agent says whether a process is a turn's agent. A harness
// names the agent (journal.Scope) by filesystem uid, by process — that
// process and everything descended from it — or by cgroup; a change any
// other process makes during the turn (a person's editor, a second tool)
// is not the turn's, and no rollback of the turn undoes it.
//
// # Who asks, and how often
//
// The FUSE layer asks once per change made during a turn that has a
// scope, from the thread's process id (fs/process.go resolves it,
// cached) and the request's filesystem uid. A uid is answered from the
// request alone. A process and a cgroup are answered from state this
// package keeps current as processes fork, exec and exit, so an answer
// costs map lookups, never a read of /proc — except the first time a
// cgroup is asked about a process, and once when a scope's process
// begins to be followed.
//
// # Following descendants: the process-events connector
//
// "That process and its descendants" must survive what agents do: a
// shell forks and execs for every command, a dev server double-forks
// and its middle process exits, so the daemon it leaves is re-parented
// to init (or a subreaper). Its parent pid then says nothing of where it
// came from, so an answer read from /proc/PID/stat at the time of a
// change — a walk up the parent chain — calls that daemon a stranger.
//
// The kernel's process-events connector (netlink NETLINK_CONNECTOR,
// CN_IDX_PROC) reports every fork, exec and exit as it happens, to
// root. The Tracker listens from the first time a scope names a process
// or a cgroup, and keeps, for each process a scope names, the set of
// its live descendants: a fork by a member adds the child, an exit
// removes it. Membership is decided at fork time, so re-parenting
// changes nothing. A process's set starts from a walk of /proc (its
// descendants by parent pid) taken after the Tracker subscribed, and
// the events queued meanwhile are applied after the walk, so no fork
// falls between the two.
//
// The kernel queues a fork's event before the child first runs, so by
// the time the child's first request reaches the daemon, its event is
// in the socket; the first question about a process therefore reads
// whatever the socket holds first (a non-blocking read) and the answer
// is final until the process exits. A goroutine reads the socket
// otherwise, so it does not overflow. If it does overflow anyway
// (ENOBUFS: events were lost), every set is walked again from /proc —
// what was re-parented since the last read is then lost, and is the
// person's from then on: a wrong answer keeps a change, never undoes
// one.
//
// Cgroups would have been the other way: put the agent in a cgroup of
// its own and read /proc/PID/cgroup. Membership is then the kernel's
// and survives anything, but only where a cgroup v2 hierarchy is
// writable and delegated (not in most containers, and not under
// systemd without a scope), and only for processes started into it:
// a harness that names a running agent by pid cannot move it without
// moving its own children too. So cgroups are a scope of their own
// (--agent-cgroup: what systemd-run --scope, a container or a service
// manager already gives), and pids are followed through the connector.
//
// The connector exists only in the initial user and pid namespaces. A
// daemon elsewhere (in a container with a pid namespace of its own)
// falls back to walking the parent chain of each process it has not
// answered for in the last moment: descendants are found as long as
// their parents live, and a re-parented daemon is not the agent's.
//
// # What is stored
//
// A scope is stored with its turn (journal.Turn.Agent), each process
// with its start time, so that a restart of cowfs mid-turn, or a pid
// reused later, never takes another process for the agent. After a
// restart a process's set is walked afresh: descendants re-parented
// before then are not found.
//
// Imports: journal (the Scope type), x/sys/unix.
package agent
