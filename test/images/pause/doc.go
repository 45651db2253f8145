// Command pause is the sandbox ("pause") container's process: it sleeps until
// SIGINT or SIGTERM and exits 0, reaping any zombie children on SIGCHLD since
// it runs as PID 1 of the pod's PID namespace.
package main
