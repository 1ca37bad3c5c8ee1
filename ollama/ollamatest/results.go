package ollamatest

// ToolResults returns the contents of the request's tool messages, in order.
func (c ChatRecord) ToolResults() []string {
	var out []string
	for _, m := range c.Request.Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

// LastToolResult returns the content of the last tool message the model received, and false
// when no request carried one.
func (s *Server) LastToolResult() (string, bool) {
	chats := s.Chats()
	for i := len(chats) - 1; i >= 0; i-- {
		if rs := chats[i].ToolResults(); len(rs) > 0 {
			return rs[len(rs)-1], true
		}
	}
	return "", false
}
