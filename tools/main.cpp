// The `ember` command: ember devices | train | eval | predict (see --help).
// Exit status: 0 on success, 1 on an error ("error: ..." on stderr), 2 for a usage error,
// 130 when training was interrupted (Ctrl-C; continue with --resume).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "ember/error.h"

int main(int argc, char** argv) {
  CLI::App app{"Ember: a C++20 deep-learning framework"};
  app.require_subcommand(1);
  ember::tools::add_devices_command(app);
  ember::tools::add_train_command(app);
  ember::tools::add_eval_command(app);
  ember::tools::add_predict_command(app);
  // Name an unknown command instead of CLI11's generic "A subcommand is required".
  bool known = argc < 2 || argv[1][0] == '-';
  for (const CLI::App* sub : app.get_subcommands({}))
    known |= sub->check_name(argc > 1 ? argv[1] : "");
  if (!known) {
    std::cerr << "error: unknown command '" << argv[1]
              << "' (expected devices, train, eval or predict)\nRun with --help for more "
                 "information.\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0 || e.get_name() == "RuntimeError") return app.exit(e);
    // CLI11 reports a missing command or argument before an unknown one ("ember --frob" said "A
    // subcommand is required"): name the arguments nobody took first, they are the likelier slip.
    std::vector<std::string> extras = app.remaining();
    for (const CLI::App* sub : app.get_subcommands({}))
      for (const std::string& x : sub->remaining()) extras.push_back(x);
    const std::string msg = extras.empty() ? e.what() : CLI::ExtrasError(extras).what();
    std::cerr << "error: " << msg << "\nRun with --help for more information.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
