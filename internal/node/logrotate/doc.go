// Package logrotate owns the rotation of container logs, as upstream's
// container log manager: every monitor interval each running container's
// current log (the CRI LogPath) that reached MaxSize is renamed with a
// timestamp suffix and the runtime told to reopen it; older rotated files
// are gzip-compressed and the oldest removed so that at most MaxFiles files
// (current one included) remain.
//
// Invariants: Plan is pure; only running containers are rotated; a failed
// reopen renames the rotated file back so no output is lost; Clean and a
// rotation of the same container never run at once.
package logrotate
