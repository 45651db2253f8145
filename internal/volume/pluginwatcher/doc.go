// Package pluginwatcher registers node plugins (CSI drivers) that announce
// themselves with a registration socket in <root-dir>/plugins_registry, as
// upstream's plugin manager does: GetInfo, the handler of the plugin's type
// validates and registers it, NotifyRegistrationStatus tells the plugin.
// Invariants: a socket is registered at most once per creation (a socket
// created again is de-registered, then registered anew); a socket that goes
// away is de-registered; failed registrations are retried with back-off,
// never concurrently for one socket.
package pluginwatcher
