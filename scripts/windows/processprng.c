/* For tests under Wine only; never shipped. Rust's standard library (1.78 and later)
 * takes its random numbers from ProcessPrng in bcryptprimitives.dll, which Windows 10
 * and later have and Wine 8 lacks: without this stand-in the .exe does not start under
 * Wine 8 (status c0000135). It answers through RtlGenRandom (advapi32's
 * SystemFunction036), which Wine has. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
