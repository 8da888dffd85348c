package wire

// The OpenClaw tools whose denial a gateway may leave to the cluster: the
// OpenClaw plugin declares exactly these as its harness registration's
// conversationToolPolicySafeDenyTools (OpenClaw's SDK contract, "Native
// tool-policy enforcement"), so OpenClaw runs a turn whose every expanded
// deny is among them without isolating the native surface, and passes the
// names on; the plugin sends them as a deny layer of the turn's toolPolicy.
// The dispatcher then decides again with the selected AgentHarness's own
// declaration: a name that harness does not list as safe restricts the turn
// (refused with ToolPolicyUnenforceable, scope harness, when the harness
// does not declare Exact). So the list only lets a turn reach the cluster;
// it never relaxes a policy there.
//
// Each name is one the Codex adapter denies on every model by itself
// (internal/dispatcher/adapter/codex SafeDenyConfig and offeredTools: the
// host tool of that name is not offered, and its native equivalent, if
// any, is switched off per thread). Left out on purpose: exec, process,
// code_execution, read, write, edit and apply_patch (Codex's shell and code
// mode, which its catalog models keep), computer control (browser,
// computer, mobile_ui, nodes, screen: Codex's browser and computer use),
// image_generate, memory_search and memory_get, the goal tools,
// sessions_spawn and subagents (Codex's image generation, memories, goals
// and sub-agents are features the adapter does not switch off for a deny),
// and the other session and conversation tools, which OpenClaw's own audit
// of Codex keeps out until native target isolation exists. A name left out
// isolates the native surface, which is the safe side.
const (
	// SafeDenyWebSearch: Codex's native web search is switched off for the
	// thread (`web_search: disabled`) on every model.
	SafeDenyWebSearch = "web_search"
	// SafeDenyViewImage: Codex's native view_image is switched off for the
	// thread (`features.view_image: false`) on every model.
	SafeDenyViewImage = "view_image"
	// SafeDenyAskUser: Codex's native request_user_input is switched off for
	// the thread on every model.
	SafeDenyAskUser = "ask_user"
	// SafeDenyWebFetch: no Codex-native equivalent; the host tool is not
	// offered.
	SafeDenyWebFetch = "web_fetch"
	// SafeDenyXSearch: no Codex-native equivalent; the host tool is not
	// offered.
	SafeDenyXSearch = "x_search"
	// SafeDenyDashboard: no Codex-native equivalent; the host tool is not
	// offered.
	SafeDenyDashboard = "dashboard"
	// SafeDenyCanvas: no Codex-native equivalent; the host tool is not
	// offered.
	SafeDenyCanvas = "canvas"
	// SafeDenyShowWidget: no Codex-native equivalent; the host tool is not
	// offered.
	SafeDenyShowWidget = "show_widget"
	// SafeDenyMessage: no Codex-native equivalent (Codex delivers no channel
	// messages); the host tool is not offered.
	SafeDenyMessage = "message"
	// SafeDenyHeartbeatRespond: no Codex-native equivalent; the host tool is
	// not offered.
	SafeDenyHeartbeatRespond = "heartbeat_respond"
	// SafeDenyAutomations: no Codex-native equivalent; the host tool is not
	// offered.
	SafeDenyAutomations = "automations"
	// SafeDenyGateway: no Codex-native equivalent; the host tool is not
	// offered.
	SafeDenyGateway = "gateway"
	// SafeDenyAgentsList: an OpenClaw status tool with no Codex-native
	// equivalent; the host tool is not offered.
	SafeDenyAgentsList = "agents_list"
	// SafeDenyOpenClaw: an OpenClaw admin tool with no Codex-native
	// equivalent; the host tool is not offered.
	SafeDenyOpenClaw = "openclaw"
	// SafeDenySessionStatus: an OpenClaw status tool with no Codex-native
	// equivalent; the host tool is not offered.
	SafeDenySessionStatus = "session_status"
	// SafeDenyProgressCard: no Codex-native equivalent; the host tool is not
	// offered.
	SafeDenyProgressCard = "progress_card"
	// SafeDenySkillWorkshop: no Codex-native equivalent; the host tool is
	// not offered.
	SafeDenySkillWorkshop = "skill_workshop"
	// SafeDenyMusicGenerate: no Codex-native equivalent; the host tool is
	// not offered.
	SafeDenyMusicGenerate = "music_generate"
	// SafeDenyVideoGenerate: no Codex-native equivalent; the host tool is
	// not offered.
	SafeDenyVideoGenerate = "video_generate"
	// SafeDenyTTS: no Codex-native equivalent; the host tool is not offered.
	SafeDenyTTS = "tts"
)

// SafeDenyTools returns the SafeDeny* names above, in their order, as a new
// slice.
func SafeDenyTools() []string {
	return []string{
		SafeDenyWebSearch, SafeDenyViewImage, SafeDenyAskUser, SafeDenyWebFetch, SafeDenyXSearch,
		SafeDenyDashboard, SafeDenyCanvas, SafeDenyShowWidget, SafeDenyMessage, SafeDenyHeartbeatRespond,
		SafeDenyAutomations, SafeDenyGateway, SafeDenyAgentsList, SafeDenyOpenClaw, SafeDenySessionStatus,
		SafeDenyProgressCard, SafeDenySkillWorkshop, SafeDenyMusicGenerate, SafeDenyVideoGenerate, SafeDenyTTS,
	}
}
