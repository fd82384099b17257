// LD_PRELOAD shim over LLVMRunPasses, the LLVM C API call through which Mesa 22.3's gallivm runs
// its pass pipelines ("default<O0>" with the coroutine passes, then its optimisations): prints the
// module's functions, basic blocks, instructions and allocas before each run and the run's CPU
// seconds. LVPC_DUMP=dir writes the module before and after each run (m<n>.ll, m<n>_after.ll);
// LVPC_COUNT_ONLY=1 exits after the first count; LVPC_STOP_AFTER_OPT=1 (with LVPC_DUMP) exits
// after the second run, before code generation. Declares the few LLVM-C functions it calls, so it
// builds without LLVM's headers.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
typedef struct M* LLVMModuleRef;
typedef struct V* LLVMValueRef;
typedef struct B* LLVMBasicBlockRef;
typedef struct T* LLVMTargetMachineRef;
typedef struct O* LLVMPassBuilderOptionsRef;
typedef struct E* LLVMErrorRef;
LLVMValueRef LLVMGetFirstFunction(LLVMModuleRef);
LLVMValueRef LLVMGetNextFunction(LLVMValueRef);
int LLVMIsDeclaration(LLVMValueRef);
LLVMBasicBlockRef LLVMGetFirstBasicBlock(LLVMValueRef);
LLVMBasicBlockRef LLVMGetNextBasicBlock(LLVMBasicBlockRef);
LLVMValueRef LLVMGetFirstInstruction(LLVMBasicBlockRef);
LLVMValueRef LLVMGetNextInstruction(LLVMValueRef);
int LLVMGetInstructionOpcode(LLVMValueRef);
int LLVMPrintModuleToFile(LLVMModuleRef, const char*, char**);
enum { LLVMAlloca = 26 };
static double cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static void count(LLVMModuleRef m, long* blocks, long* insts, long* allocas, long* fns) {
  *blocks = *insts = *allocas = *fns = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f)) continue;
    ++*fns;
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b)) {
      ++*blocks;
      for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) {
        ++*insts;
        if (LLVMGetInstructionOpcode(i) == LLVMAlloca) ++*allocas;
      }
    }
  }
}
static int n;
LLVMErrorRef LLVMRunPasses(LLVMModuleRef M, const char* Passes, LLVMTargetMachineRef TM,
                           LLVMPassBuilderOptionsRef O) {
  static LLVMErrorRef (*real)(LLVMModuleRef, const char*, LLVMTargetMachineRef,
                              LLVMPassBuilderOptionsRef);
  if (!real) real = dlsym(RTLD_NEXT, "LLVMRunPasses");
  long b, i, a, f;
  count(M, &b, &i, &a, &f);
  const char* dir = getenv("LVPC_DUMP");
  if (dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/m%d.ll", dir, n);
    LLVMPrintModuleToFile(M, path, 0);
  }
  if (getenv("LVPC_COUNT_ONLY")) {
    fprintf(stderr, "[shim] %ld fns %ld blocks %ld insts %ld allocas\n", f, b, i, a);
    _exit(0);
  }
  double t0 = cpu();
  LLVMErrorRef e = real(M, Passes, TM, O);
  double t1 = cpu();
  if (dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/m%d_after.ll", dir, n);
    LLVMPrintModuleToFile(M, path, 0);
    if (n == 1 && getenv("LVPC_STOP_AFTER_OPT")) _exit(0);
  }
  fprintf(stderr,
          "[shim] run %d '%.40s': before %ld fns %ld blocks %ld insts %ld allocas; %.2f s cpu\n", n,
          Passes, f, b, i, a, t1 - t0);
  ++n;
  return e;
}
