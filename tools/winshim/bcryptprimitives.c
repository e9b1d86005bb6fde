/*
 * bcryptprimitives.dll for Wine 8.0, which has none: Go's Windows runtime (the Go 1.26 the
 * project builds with) takes its random numbers from ProcessPrng in this library at start-up
 * and dies without it ("fatal error: bcryptprimitives.dll not found"), so no Go program starts
 * under Debian's Wine. This stand-in exports ProcessPrng alone, over RtlGenRandom (advapi32's
 * SystemFunction036), which Wine has. tools/check-windows.sh builds it with mingw-w64 into
 * build/ and copies it into the Wine prefix's system32 (the runtime loads it from there only);
 * it is never shipped.
 *
 * Like the real one, it fills the whole buffer and returns TRUE (callers may ignore the result).
 */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
    if (!RtlGenRandom(data, n)) {
      return FALSE;
    }
    data += n;
    len -= n;
  }
  return TRUE;
}

/* The entry point: no C runtime (built with -nostdlib), nothing to set up. */
BOOL WINAPI DllMain(HINSTANCE dll, DWORD reason, LPVOID reserved) {
  (void)dll;
  (void)reason;
  (void)reserved;
  return TRUE;
}
