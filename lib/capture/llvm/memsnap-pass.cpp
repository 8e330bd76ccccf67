// memsnap-pass.so: memsnap-cc's LLVM pass plugin (LLVM 14, new pass manager; issue 21).
//
// Model. At the end of the optimization pipeline (registerOptimizerLastEPCallback: the
// loops the binary will run, before SanitizerCoverage adds its callbacks), every load and
// store inside a loop is classified after the levels of Diniz and Krishna's compiler-guided
// instrumentation (figure 3 of their paper):
//   hoisted k/n   its address is affine in the k innermost of its n enclosing loops
//                 (ScalarEvolution: an add recurrence of each, with a step invariant in
//                 it), each of those loops has a computable trip count that is invariant
//                 in the k-th one, no calls and a single exit, and the access executes on
//                 every iteration: the k loops' accesses could be described once per entry
//                 of the k-th loop (the paper's bounds saved before the loop, constant or
//                 symbolic), base, steps and trip counts taken there;
//   per-access    k = 0: recorded one by one (the paper's per-iteration level), and why:
//                 loop with a call, early exit, unknown trip count, conditional access,
//                 indirect address (it depends on a value loaded in the loop), non-affine
//                 address.
// For k < n the reason says what stops the description at the k-th loop (a trip count
// that varies with the next loop out: triangular or data-dependent bounds, an inner loop
// that is not entered on every iteration, or one of the reasons above).
// The report pass transforms nothing: it writes a report when $MEMSNAP_REPORT names a
// file (memsnap-cc --memsnap-report=FILE sets it): one section per translation unit,
// appended with a single write, one line per reference (docs/rt.md shows one).
// With $MEMSNAP_INLINE=1 a second pass, after it, appends each access's record inline
// (inline-records.cpp).
// Calls: any call but an intrinsic that is not a memory transfer. A readnone function
// still has loads and stores of its own stack that the coverage callbacks record, and
// they would come out of order with a hoisted description.
#include "passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <string>

using namespace llvm;

namespace {

struct Classification {
  unsigned hoisted = 0; // enclosing loops, innermost first, that a description covers
  unsigned depth = 0;   // enclosing loops
  std::string reason;   // what stops it at `hoisted`
};

std::string lineOf(const Loop *loop) {
  DebugLoc location = loop->getStartLoc();
  return location ? "line " + std::to_string(location.getLine()) : "?";
}

// The first call in `loop` that is not a harmless intrinsic, or null.
const CallBase *firstCall(const Loop *loop) {
  for (const BasicBlock *block : loop->blocks())
    for (const Instruction &instruction : *block) {
      const auto *call = dyn_cast<CallBase>(&instruction);
      if (!call) continue;
      if (isa<IntrinsicInst>(call) && !isa<MemIntrinsic>(call)) continue;
      return call;
    }
  return nullptr;
}

std::string callReason(const CallBase *call) {
  std::string text = "loop with a call";
  if (const Function *callee = call->getCalledFunction()) text += " to " + callee->getName().str();
  if (DebugLoc location = call->getDebugLoc())
    text += " (line " + std::to_string(location.getLine()) + ")";
  return text;
}

// Whether `inner`, a loop directly inside `outer`, runs on every iteration of `outer`, or
// on every one or none of an entry of `outer`: skipped only by a guard whose condition
// `outer` does not change (its trip count's test, hoisted: `m > 0` for `j < m`).
bool enteredEveryIteration(const Loop *inner, const Loop *outer, const DominatorTree &dominators) {
  const BasicBlock *latch = outer->getLoopLatch();
  if (!latch) return false;
  if (dominators.dominates(inner->getHeader(), latch)) return true;
  const BasicBlock *preheader = inner->getLoopPreheader();
  const BasicBlock *guard = preheader ? preheader->getUniquePredecessor() : nullptr;
  const auto *branch = guard ? dyn_cast<BranchInst>(guard->getTerminator()) : nullptr;
  if (!branch || !branch->isConditional()) return false;
  const BasicBlock *skip = branch->getSuccessor(branch->getSuccessor(0) == preheader ? 1 : 0);
  return skip == inner->getUniqueExitBlock() && outer->isLoopInvariant(branch->getCondition()) &&
         dominators.dominates(guard, latch);
}

// Why `loop` itself prevents describing the access `access` (inside it, `child` the loop
// directly inside `loop` that holds it, or null) once per entry of `loop`; empty if not.
std::string loopBlocker(const Loop *loop, const Loop *child, const Instruction *access,
                        ScalarEvolution &evolution, const DominatorTree &dominators) {
  if (const CallBase *call = firstCall(loop)) return callReason(call);
  if (!loop->getExitingBlock()) return "early exit (loop at " + lineOf(loop) + ")";
  if (isa<SCEVCouldNotCompute>(evolution.getBackedgeTakenCount(loop)))
    return "unknown trip count (loop at " + lineOf(loop) + ")";
  const BasicBlock *latch = loop->getLoopLatch();
  if (!child) {
    if (!latch || !dominators.dominates(access->getParent(), latch))
      return "conditional access (not on every iteration of the loop at " + lineOf(loop) + ")";
  } else if (!enteredEveryIteration(child, loop, dominators)) {
    return "the loop at " + lineOf(child) + " is not entered on every iteration of the loop at " +
           lineOf(loop);
  }
  return "";
}

// Whether `expression` uses a value loaded inside `loop`.
bool loadedIn(const SCEV *expression, const Loop *loop) {
  return SCEVExprContains(expression, [loop](const SCEV *part) {
    const auto *unknown = dyn_cast<SCEVUnknown>(part);
    const auto *load = unknown ? dyn_cast<LoadInst>(unknown->getValue()) : nullptr;
    return load && loop->contains(load);
  });
}

// Why the address `address` (as seen in `loop`) is not an affine recurrence of `loop`.
std::string addressReason(const SCEV *address, const Loop *loop) {
  if (loadedIn(address, loop)) return "indirect address (depends on a value loaded in the loop)";
  return "non-affine address";
}

// Why the trip count `trips` of a covered loop is not the same on each entry of `loop`.
std::string boundsReason(const SCEV *trips, const Loop *loop) {
  const auto *recurrence = dyn_cast<SCEVAddRecExpr>(trips);
  if (recurrence && recurrence->getLoop() == loop && recurrence->isAffine()) return "triangular";
  return loadedIn(trips, loop) ? "data-dependent bounds" : "bounds not affine in it";
}

Classification classify(const Instruction *access, const Value *pointer, LoopInfo &loops,
                        ScalarEvolution &evolution, const DominatorTree &dominators) {
  Classification result;
  const Loop *innermost = loops.getLoopFor(access->getParent());
  result.depth = innermost->getLoopDepth();
  const SCEV *address = evolution.getSCEV(const_cast<Value *>(pointer));
  const Loop *child = nullptr;
  for (const Loop *loop = innermost; loop; child = loop, loop = loop->getParentLoop()) {
    std::string blocker = loopBlocker(loop, child, access, evolution, dominators);
    if (!blocker.empty()) {
      result.reason = blocker;
      return result;
    }
    // the loops already covered must repeat the same trip counts on each entry of this one
    for (const Loop *covered = innermost; covered != loop; covered = covered->getParentLoop()) {
      const SCEV *trips = evolution.getBackedgeTakenCount(covered);
      if (evolution.isLoopInvariant(trips, loop)) continue;
      result.reason = "trip count of the loop at " + lineOf(covered) + " varies with the loop at " +
                      lineOf(loop) + " (" + boundsReason(trips, loop) + ")";
      return result;
    }
    if (!evolution.isLoopInvariant(address, loop)) {
      const auto *recurrence = dyn_cast<SCEVAddRecExpr>(address);
      if (!recurrence || recurrence->getLoop() != loop || !recurrence->isAffine() ||
          !evolution.isLoopInvariant(recurrence->getStepRecurrence(evolution), loop)) {
        result.reason = addressReason(address, loop);
        return result;
      }
      address = recurrence->getStart();
    }
    result.hoisted++;
  }
  return result;
}

// Source-level names of values (arguments, locals) from the function's debug intrinsics.
DenseMap<const Value *, StringRef> variableNames(const Function &function) {
  DenseMap<const Value *, StringRef> names;
  for (const BasicBlock &block : function)
    for (const Instruction &instruction : block)
      if (const auto *debug = dyn_cast<DbgVariableIntrinsic>(&instruction))
        if (const Value *value = debug->getVariableLocationOp(0))
          names.try_emplace(value, debug->getVariable()->getName());
  return names;
}

std::string describe(const Instruction *access, const Value *pointer, ScalarEvolution &evolution,
                     const DenseMap<const Value *, StringRef> &names) {
  const DataLayout &layout = access->getModule()->getDataLayout();
  Type *type = isa<LoadInst>(access) ? access->getType()
                                     : cast<StoreInst>(access)->getValueOperand()->getType();
  std::string text = isa<LoadInst>(access) ? "load " : "store ";
  text += std::to_string(layout.getTypeStoreSize(type).getKnownMinSize());
  const SCEV *base = evolution.getPointerBase(evolution.getSCEV(const_cast<Value *>(pointer)));
  if (const auto *unknown = dyn_cast<SCEVUnknown>(base)) {
    const Value *value = unknown->getValue();
    auto found = names.find(value);
    if (found != names.end())
      text += " " + found->second.str() + "[]";
    else if (value->hasName())
      text += " " + value->getName().str() + "[]";
  }
  return text;
}

struct Counts {
  unsigned complete = 0, partial = 0, perAccess = 0, outside = 0;
};

void reportFunction(Function &function, FunctionAnalysisManager &analyses, raw_ostream &out,
                    Counts &counts) {
  LoopInfo &loops = analyses.getResult<LoopAnalysis>(function);
  ScalarEvolution &evolution = analyses.getResult<ScalarEvolutionAnalysis>(function);
  DominatorTree &dominators = analyses.getResult<DominatorTreeAnalysis>(function);
  DenseMap<const Value *, StringRef> names;
  bool named = false;
  for (BasicBlock &block : function)
    for (Instruction &instruction : block) {
      const Value *pointer = getLoadStorePointerOperand(&instruction);
      if (!pointer) continue;
      if (!loops.getLoopFor(&block)) {
        counts.outside++;
        continue;
      }
      if (!named) names = variableNames(function), named = true;
      Classification c = classify(&instruction, pointer, loops, evolution, dominators);
      const char *level = c.hoisted ? "hoisted" : "per-access";
      if (c.hoisted == c.depth) {
        counts.complete++;
        c.reason = "affine, trip counts known at entry";
      } else {
        (c.hoisted ? counts.partial : counts.perAccess)++;
      }
      std::string location = "?";
      if (DebugLoc at = instruction.getDebugLoc()) {
        const auto *scope = cast<DIScope>(at.getScope());
        location = scope->getFilename().str() + ":" + std::to_string(at.getLine()) + ":" +
                   std::to_string(at.getCol());
      }
      out << function.getName() << '\t' << location << '\t'
          << describe(&instruction, pointer, evolution, names) << '\t' << level << '\t' << c.hoisted
          << '/' << c.depth << '\t' << c.reason << '\n';
    }
}

struct ReportPass : PassInfoMixin<ReportPass> {
  PreservedAnalyses run(Module &module, ModuleAnalysisManager &moduleAnalyses) {
    const char *path = std::getenv("MEMSNAP_REPORT");
    if (!path || !*path) return PreservedAnalyses::all();
    FunctionAnalysisManager &analyses =
        moduleAnalyses.getResult<FunctionAnalysisManagerModuleProxy>(module).getManager();
    std::string text;
    raw_string_ostream out(text);
    out << "# memsnap-cc report: " << module.getSourceFileName() << '\n'
        << "# function\tlocation\taccess\tlevel\tloops\treason\n";
    Counts counts;
    for (Function &function : module)
      if (!function.isDeclaration()) reportFunction(function, analyses, out, counts);
    out << "# references in loops: " << counts.complete + counts.partial + counts.perAccess
        << " (hoisted out of every loop " << counts.complete << ", out of some " << counts.partial
        << ", per-access " << counts.perAccess << "); outside loops " << counts.outside << '\n';
    out.flush();
    std::error_code error;
    raw_fd_ostream file(path, error, sys::fs::OF_Append | sys::fs::OF_Text);
    if (error) {
      errs() << "memsnap-pass: cannot write " << path << ": " << error.message() << '\n';
      return PreservedAnalyses::all();
    }
    file.SetUnbuffered();
    file << text; // one write: translation units built in parallel do not interleave
    return PreservedAnalyses::all();
  }
};

// $MEMSNAP_INLINE=1 (memsnap-cc --memsnap-mode=inline): records appended inline.
struct InlineRecordsPass : PassInfoMixin<InlineRecordsPass> {
  PreservedAnalyses run(Module &module, ModuleAnalysisManager &) {
    const char *mode = std::getenv("MEMSNAP_INLINE");
    if (!mode || std::strcmp(mode, "1") != 0 || !memsnapInlineRecords(module))
      return PreservedAnalyses::all();
    return PreservedAnalyses::none();
  }
};

} // namespace

extern "C" __attribute__((visibility("default"))) PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "memsnap", "1", [](PassBuilder &builder) {
            builder.registerOptimizerLastEPCallback(
                [](ModulePassManager &passes, OptimizationLevel) {
                  passes.addPass(ReportPass()); // first: the code as written
                  passes.addPass(InlineRecordsPass());
                });
          }};
}
