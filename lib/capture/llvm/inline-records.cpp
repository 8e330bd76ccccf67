// Inline per-access records (memsnap-cc --memsnap-mode=inline; issue 21, part 2).
//
// Model. Instead of SanitizerCoverage's call per load and store, each access the coverage
// pass would instrument (every IR load and store of 1, 2, 4, 8 or 16 bytes in every
// function it would instrument) gets, just before it, the runtime's fast path inline:
//
//   if (ms_rt_state != OFF) {                        // idle program: one load, one branch
//     t = ms_rt_self;                                // the thread's buffer (TLS)
//     word = site_words[k];                          // this site's site << 48, 0 if unknown
//     if (t && t->pos < t->end && address < t->address_bound && word)
//       *t->pos++ = address | word;                  // the record, as the callbacks write it
//     else if (ms_rt_off && ms_rt_skips[k % 16])     // sampling, OFF phase (cold)
//       ms_rt_skips[k % 16]--;
//     else
//       ms_rt_inline_<kind><size>(address, &site_words[k]);   // cold, saves every register
//   }
//
// The slow entry does what a callback's slow path does (first access, new thread, full
// buffer, sampling phases, long forms), with the call's return address as the site's pc,
// and fills site_words[k]. So the records are those of the callbacks, in the same order;
// only each site's pc is the slow call's instead of the callback call's, on the same
// source line (the inserted code carries the access's debug location). site_words is one
// table per module, registered by a constructor so that a fork child can clear it.
// x86-64 only (the slow entries are the runtime's assembly).
#include "passes.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

#include <string>
#include <vector>

using namespace llvm;

namespace {

enum { StateOff = 3 }; // rt.c's STATE_OFF

// SanitizerCoverage's choice of functions (clang 14), which the records must match.
bool instrumented(const Function &function) {
  if (function.empty() || function.getName().contains(".module_ctor") ||
      function.getName().startswith("__sanitizer_") || function.getName().startswith("ms_rt_") ||
      function.getLinkage() == GlobalValue::AvailableExternallyLinkage ||
      function.hasFnAttribute(Attribute::NoSanitizeCoverage))
    return false;
  return !isa<UnreachableInst>(function.getEntryBlock().getTerminator());
}

// The index of a callback by size (1, 2, 4, 8, 16 bytes), -1 for others, as the coverage
// pass chooses.
int sizeIndex(const DataLayout &layout, Type *type) {
  switch (layout.getTypeStoreSizeInBits(type)) {
  case 8: return 0;
  case 16: return 1;
  case 32: return 2;
  case 64: return 3;
  case 128: return 4;
  default: return -1;
  }
}

struct Runtime {
  GlobalVariable *state, *self, *off, *skips;
  FunctionCallee slow[2][5]; // [store][size index]
};

Runtime declareRuntime(Module &module) {
  LLVMContext &context = module.getContext();
  Type *i8p = Type::getInt8PtrTy(context), *i64p = Type::getInt64PtrTy(context);
  Runtime runtime;
  runtime.state =
      cast<GlobalVariable>(module.getOrInsertGlobal("ms_rt_state", Type::getInt32Ty(context)));
  runtime.self = cast<GlobalVariable>(module.getOrInsertGlobal("ms_rt_self", i8p));
  runtime.self->setThreadLocalMode(GlobalValue::InitialExecTLSModel);
  runtime.off =
      cast<GlobalVariable>(module.getOrInsertGlobal("ms_rt_off", Type::getInt8Ty(context)));
  runtime.off->setThreadLocalMode(GlobalValue::InitialExecTLSModel);
  runtime.skips = cast<GlobalVariable>(
      module.getOrInsertGlobal("ms_rt_skips", ArrayType::get(Type::getInt64Ty(context), 16)));
  runtime.skips->setThreadLocalMode(GlobalValue::InitialExecTLSModel);
  static const char *const sizes[] = {"1", "2", "4", "8", "16"};
  for (int store = 0; store < 2; store++)
    for (int i = 0; i < 5; i++) {
      std::string name = std::string("ms_rt_inline_") + (store ? "store" : "load") + sizes[i];
      runtime.slow[store][i] = module.getOrInsertFunction(
          name, FunctionType::get(Type::getVoidTy(context), {i8p, i64p}, false));
      if (auto *function = dyn_cast<Function>(runtime.slow[store][i].getCallee())) {
        function->addFnAttr("no_caller_saved_registers");
        function->addFnAttr(Attribute::NoUnwind);
      }
    }
  return runtime;
}

// Inserts the inline record before `access`, whose site word is `word`, the k-th of its
// module.
void instrument(Instruction *access, Value *pointer, bool store, int size, Value *word, size_t k,
                const Runtime &runtime) {
  LLVMContext &context = access->getContext();
  Function *function = access->getFunction();
  Type *i8 = Type::getInt8Ty(context), *i64 = Type::getInt64Ty(context);
  Type *i8p = Type::getInt8PtrTy(context), *i64p = Type::getInt64PtrTy(context);
  MDBuilder weights(context);
  BasicBlock *head = access->getParent();
  BasicBlock *rest = head->splitBasicBlock(access, "memsnap.rest");
  BasicBlock *active = BasicBlock::Create(context, "memsnap.active", function, rest);
  BasicBlock *check = BasicBlock::Create(context, "memsnap.check", function, rest);
  BasicBlock *append = BasicBlock::Create(context, "memsnap.append", function, rest);
  BasicBlock *slow = BasicBlock::Create(context, "memsnap.slow", function, rest);
  BasicBlock *skipping = BasicBlock::Create(context, "memsnap.skipping", function, rest);
  BasicBlock *skip = BasicBlock::Create(context, "memsnap.skip", function, rest);
  BasicBlock *call = BasicBlock::Create(context, "memsnap.call", function, rest);
  DebugLoc location = access->getDebugLoc();

  head->getTerminator()->eraseFromParent();
  IRBuilder<> b(head);
  b.SetCurrentDebugLocation(location);
  Value *state = b.CreateLoad(Type::getInt32Ty(context), runtime.state);
  b.CreateCondBr(b.CreateICmpEQ(state, b.getInt32(StateOff)), rest, active);

  b.SetInsertPoint(active);
  Value *thread = b.CreateLoad(i8p, runtime.self);
  b.CreateCondBr(b.CreateIsNull(thread), slow, check, weights.createBranchWeights(1, 1000));

  b.SetInsertPoint(check);
  auto field = [&](int offset, Type *pointee) {
    return b.CreateBitCast(b.CreateConstInBoundsGEP1_64(i8, thread, offset),
                           PointerType::getUnqual(pointee));
  };
  Value *positionField = field(8, i64p); // rt_thread.pos, .end, .address_bound
  Value *position = b.CreateLoad(i64p, positionField);
  Value *end = b.CreateLoad(i64p, field(16, i64p));
  Value *bound = b.CreateLoad(i64, field(24, i64));
  Value *bits = b.CreateLoad(i64, word);
  Value *address = b.CreatePtrToInt(pointer, i64);
  Value *fits =
      b.CreateAnd(b.CreateAnd(b.CreateICmpULT(position, end), b.CreateICmpULT(address, bound)),
                  b.CreateICmpNE(bits, b.getInt64(0)));
  b.CreateCondBr(fits, append, slow, weights.createBranchWeights(1000, 1));

  b.SetInsertPoint(append);
  b.CreateStore(b.CreateOr(address, bits), position);
  StoreInst *advance = b.CreateStore(b.CreateConstInBoundsGEP1_64(i64, position, 1), positionField);
  advance->setAtomic(AtomicOrdering::Release); // a finalizing thread reads pos
  advance->setAlignment(Align(8));
  b.CreateBr(rest);

  b.SetInsertPoint(slow);
  Value *off = b.CreateLoad(i8, runtime.off);
  b.CreateCondBr(b.CreateICmpNE(off, b.getInt8(0)), skipping, call);

  b.SetInsertPoint(skipping);
  Value *budgetField =
      b.CreateConstInBoundsGEP2_64(runtime.skips->getValueType(), runtime.skips, 0, k % 16);
  Value *budget = b.CreateLoad(i64, budgetField);
  b.CreateCondBr(b.CreateICmpNE(budget, b.getInt64(0)), skip, call);

  b.SetInsertPoint(skip);
  b.CreateStore(b.CreateSub(budget, b.getInt64(1)), budgetField);
  b.CreateBr(rest);

  b.SetInsertPoint(call);
  CallInst *slowCall =
      b.CreateCall(runtime.slow[store][size], {b.CreatePointerCast(pointer, i8p), word});
  slowCall->addFnAttr(Attribute::get(context, "no_caller_saved_registers"));
  b.CreateBr(rest);
}

} // namespace

bool memsnapInlineRecords(Module &module) {
  if (!Triple(module.getTargetTriple()).isX86() ||
      Triple(module.getTargetTriple()).getArch() != Triple::x86_64)
    return false;
  const DataLayout &layout = module.getDataLayout();
  struct Access {
    Instruction *instruction;
    Value *pointer;
    bool store;
    int size;
  };
  std::vector<Access> accesses;
  for (Function &function : module) {
    if (!instrumented(function)) continue;
    for (BasicBlock &block : function)
      for (Instruction &instruction : block) {
        if (auto *load = dyn_cast<LoadInst>(&instruction)) {
          int size = sizeIndex(layout, load->getType());
          if (size >= 0) accesses.push_back({load, load->getPointerOperand(), false, size});
        } else if (auto *store = dyn_cast<StoreInst>(&instruction)) {
          int size = sizeIndex(layout, store->getValueOperand()->getType());
          if (size >= 0) accesses.push_back({store, store->getPointerOperand(), true, size});
        }
      }
  }
  if (accesses.empty()) return false;
  LLVMContext &context = module.getContext();
  Type *i64 = Type::getInt64Ty(context);
  auto *tableType = ArrayType::get(i64, accesses.size());
  auto *table = new GlobalVariable(module, tableType, false, GlobalValue::InternalLinkage,
                                   ConstantAggregateZero::get(tableType), "memsnap.site_words");
  table->setAlignment(Align(8));
  Runtime runtime = declareRuntime(module);
  for (size_t k = 0; k < accesses.size(); k++) {
    Constant *word = ConstantExpr::getInBoundsGetElementPtr(
        tableType, table, ArrayRef<Constant *>{ConstantInt::get(i64, 0), ConstantInt::get(i64, k)});
    instrument(accesses[k].instruction, accesses[k].pointer, accesses[k].store, accesses[k].size,
               word, k, runtime);
  }
  // the constructor that registers the table with the runtime
  Type *i64p = Type::getInt64PtrTy(context);
  FunctionCallee registerSites = module.getOrInsertFunction(
      "ms_rt_register_sites", FunctionType::get(Type::getVoidTy(context), {i64p, i64p}, false));
  Function *constructor =
      Function::Create(FunctionType::get(Type::getVoidTy(context), false),
                       GlobalValue::InternalLinkage, "memsnap.register_sites", module);
  IRBuilder<> b(BasicBlock::Create(context, "", constructor));
  Constant *begin = ConstantExpr::getInBoundsGetElementPtr(
      tableType, table, ArrayRef<Constant *>{ConstantInt::get(i64, 0), ConstantInt::get(i64, 0)});
  Constant *end = ConstantExpr::getInBoundsGetElementPtr(
      tableType, table,
      ArrayRef<Constant *>{ConstantInt::get(i64, 0), ConstantInt::get(i64, accesses.size())});
  b.CreateCall(registerSites, {begin, end});
  b.CreateRetVoid();
  appendToGlobalCtors(module, constructor, 65535);
  return true;
}
