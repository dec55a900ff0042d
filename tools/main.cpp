// The `ember` command: ember devices | train | eval | predict | run | onnx (see --help).
// Exit status (the same for every command; `ember --help` and README.md list them): 0 on
// success; 2 for a usage error ("error: <what>" and "Run with --help ..." on stderr: an unknown
// command or option, a missing argument, a value out of its range or not one of the choices);
// 1 when the command fails ("error: [<tag>] <what>": a missing or corrupt file, a device that
// cannot run, data that does not match the model); 3 when eval / predict computed outputs that
// are not numbers (NaN or infinite weights); 130 when training was interrupted (Ctrl-C;
// continue with --resume).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "ember/dist/dist.h"
#include "ember/error.h"

int main(int argc, char** argv) {
  CLI::App app{"Ember: a C++20 deep-learning framework"};
  app.require_subcommand(1);
  app.footer(
      "Exit status (every command):\n"
      "  0    success\n"
      "  1    the command failed: \"error: [TAG] message\" on stderr (a missing or corrupt\n"
      "       file, a device that cannot run, data that does not match the model, ...)\n"
      "  2    usage error: \"error: message\" and a pointer to --help (an unknown command or\n"
      "       option, a missing argument, a value out of range or not one of the choices)\n"
      "  3    `ember eval` / `ember predict`: the model's output is not a number (NaN or\n"
      "       infinity: its weights are); the figures printed are meaningless\n"
      "  130  `ember train` was interrupted (Ctrl-C); continue with --resume");
  ember::tools::add_devices_command(app);
  ember::tools::add_train_command(app);
  ember::tools::add_eval_command(app);
  ember::tools::add_predict_command(app);
#ifdef EMBER_HAVE_ONNX
  ember::tools::add_onnx_commands(app);
  const char* commands = "devices, train, eval, predict, run, export or onnx";
#else
  const char* commands = "devices, train, eval or predict";
#endif
  // Name an unknown command instead of CLI11's generic "A subcommand is required".
  bool known = argc < 2 || argv[1][0] == '-';
  for (const CLI::App* sub : app.get_subcommands({}))
    known |= sub->check_name(argc > 1 ? argv[1] : "");
  if (!known) {
    std::cerr << "error: unknown command '" << argv[1] << "' (expected " << commands
              << ")\nRun with --help for more information.\n";
    return ember::tools::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0 || e.get_name() == "RuntimeError") return app.exit(e);
    // A single-value option given twice: CLI11 said "--epochs: At Most 1 required but received
    // 2", or checked one of the values first. Every argument is read before any is checked, so
    // the counts are complete here; flags (--resume) may repeat.
    std::vector<const CLI::App*> apps = {&app};  // and the nested ones (onnx conformance)
    for (size_t i = 0; i < apps.size(); ++i)
      for (const CLI::App* sub : apps[i]->get_subcommands()) apps.push_back(sub);
    for (const CLI::App* a : apps)
      for (const CLI::Option* o : a->get_options())
        if (o->get_type_size() > 0 && o->get_items_expected_max() == 1 && o->count() > 1) {
          std::cerr << "error: " << o->get_name() << " given more than once (give it once)"
                    << "\nRun with --help for more information.\n";
          return ember::tools::kExitUsage;
        }
    // CLI11 reports a missing command or argument before an unknown one ("ember --frob" said "A
    // subcommand is required"): name the arguments nobody took first, they are the likelier slip.
    std::vector<std::string> extras = app.remaining();
    for (const CLI::App* sub : app.get_subcommands({}))
      for (const std::string& x : sub->remaining()) extras.push_back(x);
    std::string msg = extras.empty() ? e.what() : CLI::ExtrasError(extras).what();
    if (msg.rfind(": ", 0) == 0) msg = msg.substr(2);  // a hidden option's (commands.h)
    std::cerr << "error: " << msg << "\nRun with --help for more information.\n";
    return ember::tools::kExitUsage;
  } catch (const std::exception& e) {
    // ember::Error carries its tag; anything else (std::filesystem, std::bad_alloc) gets the
    // command's, so every failure reads "error: [tag] message".
    const std::string what = e.what();
    const bool tagged = what.size() > 2 && what[0] == '[' && what.find("] ") != std::string::npos;
    std::string tag = "ember";
    for (const CLI::App* sub : app.get_subcommands()) tag = sub->get_name();
    std::cerr << "error: " << (tagged ? "" : "[" + tag + "] ") << what << "\n";
    // One rank of a data-parallel run: the others must not wait for it (mpi would wait in
    // MPI_Finalize until the timeout; this makes the job end at once).
    ember::dist::abort_process_group(what);
    return ember::tools::kExitFailure;
  }
  return 0;
}
