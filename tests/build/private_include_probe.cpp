// Compiled by the module_privacy test with exec's include paths: once with one of exec's own
// private headers (must compile) and once with one of method's (must not).
#include ESI_PROBE_HEADER

int esi_private_include_probe() { return 0; }
