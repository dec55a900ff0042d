// The `ember` command: ember devices | train | eval | predict (see --help).
#include <iostream>

#include "commands.h"
#include "ember/error.h"

int main(int argc, char** argv) {
  CLI::App app{"Ember: a C++20 deep-learning framework"};
  app.require_subcommand(1);
  ember::tools::add_devices_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ember::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
