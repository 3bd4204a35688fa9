// Preloaded (`--import`) into the API and worker processes a test starts: when the test process
// dies without its teardown (a crash, a timeout's kill), its IPC channel closes and the role shuts
// down too, instead of spinning on for the rest of the run against services that are gone.
process.channel?.unref(); // the channel alone never keeps the role alive
process.once('disconnect', () => {
  process.kill(process.pid, 'SIGTERM');
  setTimeout(() => process.exit(1), 5000).unref();
});
