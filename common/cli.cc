// The command-line machinery both mlbert binaries share, around CLI11. Before CLI11 parses, the
// command words are walked down the registered subcommand tree, so an unknown word is reported as
// such (CLI11 itself would say "A subcommand is required" or print the parent's help), and so is an
// unknown option; every usage error then leaves as one line and exit status 2, whatever CLI11's own
// exit code for it.
#include "common/cli.h"

#include "common/input_file.h"
#include "common/nearest_name.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <sstream>

namespace mlbert::cli {

const std::vector<CommandGroup>& command_groups() {
  static const std::vector<CommandGroup> groups = {
      {"audit", "audit MLPerf result logs and submissions (the official tools' semantics)"},
      {"official", "the official mlperf_logging tools' command lines, answered by mlbert"},
      {"data", "prepare the training data"},
      {"model", "BERT checkpoints"},
      {"train", "train, launch and try out"},
  };
  return groups;
}

namespace {

constexpr int kUsageError = 2;
// Top-level help: the name column, then the description. A group of longer names (the official
// tools' `system_desc_checker`) gets a column of its own, two spaces after its longest name.
constexpr std::size_t kCommandColumn = 16;

std::vector<const CLI::App*> named_subcommands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); });
}

std::string names_of(const std::vector<const CLI::App*>& commands) {
  std::string names;
  for (const CLI::App* c : commands) names += (names.empty() ? "" : ", ") + c->get_name();
  return names;
}

// `mlbert --help`: the commands under their group's title, one line each. A command's own
// subcommands (`mlbert data --help`) are one plain list: they inherit their parent's group.
class GroupedHelp : public CLI::Formatter {
 public:
  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode /*mode*/) const override {
    const auto commands = named_subcommands(*app);
    if (app->get_parent() != nullptr) {
      if (commands.empty()) return "";
      std::ostringstream out;
      out << "\nSubcommands:\n";
      for (const CLI::App* c : commands) out << make_subcommand(c);
      return out.str();
    }
    std::vector<std::string> order;
    for (const auto& group : command_groups()) order.emplace_back(group.name);
    for (const CLI::App* c : commands)
      if (std::find(order.begin(), order.end(), c->get_group()) == order.end())
        order.push_back(c->get_group());
    std::ostringstream out;
    for (const auto& group : order) {
      std::vector<const CLI::App*> members;
      for (const CLI::App* c : commands)
        if (c->get_group() == group) members.push_back(c);
      if (members.empty()) continue;
      std::string title = group;
      for (const auto& known : command_groups())
        if (known.name == group) title += ": " + std::string(known.title);
      out << "\n" << title << "\n";
      std::size_t column = kCommandColumn;
      for (const CLI::App* c : members) column = std::max(column, c->get_name().size() + 4);
      for (const CLI::App* c : members) {
        std::string name = "  " + c->get_name();
        name.resize(column, ' ');
        out << name << c->get_description() << "\n";
      }
    }
    return out.str();
  }
};

// Where the command words on the command line lead in the registered tree.
struct CommandWalk {
  CLI::App* command = nullptr;  // the deepest known command named
  std::string path;             // its words, "data prep"; empty at the top
  std::optional<std::string> unknown;
  bool command_missing = false;  // `command` needs a subcommand and none follows
  int first_argument = 1;        // argv index after the command words
};

CommandWalk walk_commands(CLI::App& app, int argc, char** argv) {
  CommandWalk walk{&app, "", std::nullopt, false, 1};
  auto has_positionals = [](const CLI::App& a) {
    return !a.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
  };
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word.front() == '-') return walk;  // options are CLI11's to judge
    if (named_subcommands(*walk.command).empty() || has_positionals(*walk.command)) return walk;
    CLI::App* next = nullptr;
    for (CLI::App* sub : walk.command->get_subcommands([](CLI::App*) { return true; }))
      if (!sub->get_name().empty() && sub->check_name(word)) next = sub;
    if (next == nullptr) {
      walk.unknown = word;
      return walk;
    }
    walk.command = next;
    walk.path += (walk.path.empty() ? "" : " ") + word;
    walk.first_argument = i + 1;
  }
  walk.command_missing =
      !named_subcommands(*walk.command).empty() && walk.command->get_require_subcommand_min() > 0;
  return walk;
}

std::string command_name(const CommandWalk& walk) {
  return walk.path.empty() ? "mlbert" : "mlbert " + walk.path;
}

int unknown_command(const CommandWalk& walk) {
  const auto commands = named_subcommands(*walk.command);
  std::vector<std::string> known;
  for (const CLI::App* c : commands) known.push_back(c->get_name());
  const std::string prefix = walk.path.empty() ? "" : walk.path + " ";
  const std::string suggestion = closest_command(*walk.unknown, known);
  std::fprintf(stderr, "mlbert: error: unknown command '%s%s'", prefix.c_str(),
               walk.unknown->c_str());
  if (!suggestion.empty()) {
    std::fprintf(stderr, "; did you mean '%s%s'?\n", prefix.c_str(), suggestion.c_str());
  } else {
    std::fprintf(stderr, "; the commands are: %s\n", names_of(commands).c_str());
  }
  std::fprintf(stderr, "Run `%s --help` for what each does.\n", command_name(walk).c_str());
  return kUsageError;
}

// "-5", "-0.25", "-1e3": a value, not an option.
bool looks_numeric(const std::string& word) {
  char* end = nullptr;
  std::strtod(word.c_str(), &end);
  return end != word.c_str() && *end == '\0';
}

struct KnownOptions {
  std::vector<std::string> names;  // "--ruleset", "-j", ...
  std::vector<std::string> taking_value;
};

// The command's options, and its parent's where the command lets them fall through.
KnownOptions known_options(const CLI::App& command) {
  KnownOptions known;
  for (const CLI::App* app = &command; app != nullptr;
       app = app->get_fallthrough() ? app->get_parent() : nullptr) {
    for (const CLI::Option* option : app->get_options()) {
      if (option->get_positional()) continue;
      // A flag expects no value (its type size is still 1).
      const bool takes_value = option->get_items_expected_max() > 0;
      for (const auto& name : option->get_lnames()) {
        known.names.push_back("--" + name);
        if (takes_value) known.taking_value.push_back("--" + name);
      }
      for (const auto& name : option->get_snames()) {
        known.names.push_back("-" + name);
        if (takes_value) known.taking_value.push_back("-" + name);
      }
    }
  }
  return known;
}

// The first option word on the command line that the command does not know, checked before CLI11
// parses: CLI11 validates positionals as it meets them, so `rcp --rcp_version 4.1.0 DIR` would
// otherwise be reported as "4.1.0: no such directory". A word after an option that takes a value,
// and everything after "--", is a value.
std::optional<std::string> unknown_option(const CommandWalk& walk, int argc, char** argv) {
  if (walk.command->get_allow_extras()) return std::nullopt;
  const KnownOptions known = known_options(*walk.command);
  auto has = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (int i = walk.first_argument; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.size() < 2 || word.front() != '-' || looks_numeric(word)) continue;
    const bool long_form = word.starts_with("--");
    const std::string name =
        long_form ? word.substr(0, word.find('=')) : word.substr(0, 2);  // -j4 is -j with 4
    if (!has(known.names, name)) return name;
    const bool value_attached = long_form ? word.find('=') != std::string::npos : word.size() > 2;
    if (has(known.taking_value, name) && !value_attached) ++i;
  }
  return std::nullopt;
}

// Another command of the same parent that has `option`, e.g. the official form of a command
// (`rcp --rcp_version` is `rcp_checker`'s); "" when none has.
std::string command_with_option(const CommandWalk& walk, const std::string& option) {
  const CLI::App* parent = walk.command->get_parent();
  if (parent == nullptr) return "";
  for (const CLI::App* sibling : named_subcommands(*parent)) {
    const auto names = known_options(*sibling).names;
    if (sibling != walk.command && std::find(names.begin(), names.end(), option) != names.end())
      return sibling->get_name();
  }
  return "";
}

int report_unknown_option(const CommandWalk& walk, const std::string& option) {
  const std::string suggestion = nearest_name(option, known_options(*walk.command).names);
  const std::string other = command_with_option(walk, option);
  std::fprintf(stderr, "mlbert: error: %s%sunknown option '%s'", walk.path.c_str(),
               walk.path.empty() ? "" : ": ", option.c_str());
  if (!suggestion.empty()) std::fprintf(stderr, "; did you mean '%s'?", suggestion.c_str());
  if (suggestion.empty() && !other.empty()) {
    const std::string prefix = command_name(walk).substr(0, command_name(walk).rfind(' '));
    std::fprintf(stderr, "; it is an option of `%s %s`", prefix.c_str(), other.c_str());
  }
  std::fprintf(stderr, "\nRun `%s --help` for its options and an example.\n",
               command_name(walk).c_str());
  return kUsageError;
}

// Why stat failed, errno's text unless the path is simply absent: a symlink loop or a permission
// denied on the way is not "no such file".
std::string missing_reason(const std::string& what) {
  return errno == ENOENT ? "no such " + what : std::strerror(errno);
}

std::string path_kind(const std::string& path, bool want_directory) {
  if (want_directory) return files::directory_reason(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return missing_reason("file");
  if (S_ISDIR(st.st_mode)) return "is a directory, not a file";
  return "";
}

}  // namespace

std::string closest_command(std::string_view word, const std::vector<std::string>& known) {
  std::string best = nearest_name(word, known);
  if (!best.empty() || word.size() < 2) return best;
  // A word that begins exactly one command names it.
  for (const auto& candidate : known) {
    if (candidate.starts_with(word)) {
      if (!best.empty()) return "";
      best = candidate;
    }
  }
  return best;
}

const CLI::Validator& existing_file() {
  static const CLI::Validator v(
      [](std::string& path) {
        if (auto problem = path_kind(path, false); !problem.empty())
          throw PathError(path + ": " + problem);
        return std::string();
      },
      "FILE");
  return v;
}

const CLI::Validator& existing_directory() {
  static const CLI::Validator v(
      [](std::string& path) {
        if (auto problem = path_kind(path, true); !problem.empty())
          throw PathError(path + ": " + problem);
        return std::string();
      },
      "DIR");
  return v;
}

const CLI::Validator& existing_path() {
  static const CLI::Validator v(
      [](std::string& path) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
          throw PathError(path + ": " + missing_reason("file or directory"));
        return std::string();
      },
      "PATH");
  return v;
}

void set_example(CLI::App& command, const std::string& example) {
  command.footer("Example:\n  " + example);
}

namespace {

// Whatever a command printed must have reached standard output whole: a full disk or a closed
// file behind `>` leaves stdio's error flag set, which no command checks line by line.
int check_standard_output(int exit_code) {
  errno = 0;
  std::cout.flush();  // synchronised with stdio: flushes stdout, where a write may fail
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;  // a write that failed before (a full disk mid-run) left no errno
  if (flushed && !std::ferror(stdout) && std::cout.good()) return exit_code;
  std::fprintf(stderr,
               "mlbert: error: writing to standard output failed%s%s; the output is incomplete\n",
               error ? ": " : "", error ? std::strerror(error) : "");
  return kUsageError;
}

int run_command(CLI::App& app, int argc, char** argv, const int& exit_code,
                const std::function<std::string()>& version) {
  app.set_version_flag("--version", version,
                       "Print the version, commit, CUDA support and rulesets");
  const auto help = std::make_shared<GroupedHelp>();
  std::vector<CLI::App*> pending{&app};
  while (!pending.empty()) {
    CLI::App* a = pending.back();
    pending.pop_back();
    a->formatter(help);
    for (CLI::App* sub : a->get_subcommands([](CLI::App*) { return true; })) pending.push_back(sub);
  }
  app.footer(
      "`mlbert COMMAND --help` shows a command's options and an example.\n\n"
      "Example:\n  mlbert demo");
  const CommandWalk walk = walk_commands(app, argc, argv);
  if (walk.unknown) return unknown_command(walk);
  if (const auto option = unknown_option(walk, argc, argv))
    return report_unknown_option(walk, *option);
  if (walk.command_missing) {
    std::fprintf(stderr, "mlbert: error: %s%sa command is required\n\n", walk.path.c_str(),
                 walk.path.empty() ? "" : ": ");
    const std::string parent = command_name(walk).substr(0, command_name(walk).rfind(' '));
    std::cerr << walk.command->help(walk.path.empty() ? "" : parent);
    return kUsageError;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::fprintf(stderr, "mlbert: error: %s%s%s\nRun `%s --help` for its options and an example.\n",
                 walk.path.c_str(), walk.path.empty() ? "" : ": ", e.what(),
                 command_name(walk).c_str());
    return kUsageError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbert: error: %s\n", e.what());
    return kUsageError;
  }
  return exit_code;
}

}  // namespace

int run_cli(CLI::App& app, int argc, char** argv, const int& exit_code,
            const std::function<std::string()>& version) {
  return check_standard_output(run_command(app, argc, argv, exit_code, version));
}
}  // namespace mlbert::cli
